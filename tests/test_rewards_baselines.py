"""Alignment evaluation and the baselines: LLM judge, embedding similarity, random, heuristics."""

from __future__ import annotations

import pytest

from coalign.errors import DataError
from coalign.pairs import PreferencePair
from coalign.rewards import (
    EmbeddingSimilarityRanker,
    HashingBackbone,
    LLMJudgeRanker,
    LocalRewardModel,
    RandomReward,
    TrainConfig,
    data_efficiency,
    pairwise_accuracy,
    parse_choice,
    shorter_output_reward,
    subsample,
)
from tests.fakes import FakeLM
from tests.rewards_support import minilm, qa_pairs


@pytest.mark.parametrize(
    ("reply", "choice"),
    [
        ("A", "A"),
        (" b", "B"),
        ("B.", "B"),
        ("**A**", "A"),
        ("(B)", "B"),
        ("Better: B", "B"),
        ("Answer: A", "A"),
        ("Output B is better", "B"),
        ("A is better than B", "A"),
        ("I choose B.", "B"),
        ("The better one is A", "A"),
        ("A better answer is B", "B"),
        ("Better: B, since A is wrong", "B"),
        ("The answer is B because A lacks the date", "B"),
        ("", None),
        ("Both are fine", None),
        ("A and B tie", None),
        ("Neither", None),
    ],
)
def test_parse_choice(reply: str, choice: str | None) -> None:
    assert parse_choice(reply) == choice


def _answer_is_in_context(request) -> str:
    """Judges by whether option A's answer appears in the 'Now decide' block's context."""
    block = request.messages[-1].content.rsplit("Now decide:", 1)[1]
    context = block.split("\nA) ", 1)[0]
    answer_a = block.split("\nA) ", 1)[1].split("\n", 1)[0].split("answer: ", 1)[1]
    return "A" if answer_a in context else "B"


def test_llm_judge_logic_with_fake_lm() -> None:
    train, test = qa_pairs(10, seed=1), qa_pairs(12, seed=2)
    lm = FakeLM(_answer_is_in_context)
    judge = LLMJudgeRanker(lm, {"answer": "Answers the question"}, examples=train, k=2, seed=0)
    assert pairwise_accuracy(judge, test).mean == 1.0
    assert lm.calls == 12 and judge.unparsed == 0
    prompt = judge.prompt(test[0], swap=False)
    assert prompt.count("Better: ") == 2 and prompt.endswith("Better:")
    assert "Example 1:" in prompt and "Example 3:" not in prompt
    # same seed, same prompt; the in-context examples never include the test input itself
    assert judge.prompt(test[0], swap=False) == prompt
    assert test[0].inputs["question"] not in prompt.rsplit("Now decide:", 1)[0]


def test_llm_judge_both_orders_cancels_position_bias() -> None:
    test = qa_pairs(10, seed=2)
    always_a = LLMJudgeRanker(FakeLM(lambda r: "A"), {}, k=0, both_orders=True)
    result = pairwise_accuracy(always_a, test)
    assert result.mean == 0.5  # inconsistent across orders: undecided on every pair
    unparsable = LLMJudgeRanker(FakeLM(lambda r: "no idea"), {}, k=0)
    assert pairwise_accuracy(unparsable, test).mean == 0.5 and unparsable.unparsed == 10
    consistent = LLMJudgeRanker(FakeLM(_answer_is_in_context), {}, k=0, both_orders=True)
    assert pairwise_accuracy(consistent, test).mean == 1.0


def test_llm_judge_one_order_shows_a_seeded_side_per_pair() -> None:
    test = qa_pairs(20, seed=2)
    always_a = LLMJudgeRanker(FakeLM(lambda r: "A"), {}, k=0, seed=0)
    verdicts = [always_a.compare(p) for p in test]
    # "A" means output_a where it is shown first, output_b where the pair was swapped: a judge
    # with a position habit is not credited with the label's base rate
    assert {-1.0, 1.0} == set(verdicts)
    assert verdicts == [LLMJudgeRanker(FakeLM(lambda r: "A"), {}, k=0, seed=0).compare(p)
                        for p in test]


def test_embedding_similarity_prefers_the_output_nearer_the_reference() -> None:
    pair = PreferencePair(
        "answer",
        "e1",
        {"question": "Who wrote Dracula?"},
        {"answer": "Bram Stoker"},
        {"answer": "Mary Shelley"},
        1.0,
        0.0,
        "a",
    )
    hbc = EmbeddingSimilarityRanker(minilm(), {"e1": {"answer": "Bram Stoker"}})
    assert hbc.compare(pair) > 0
    assert hbc.similarity("e1", {"answer": "Bram Stoker"}) == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(DataError, match="no known-good output for example 'e2'"):
        hbc.similarity("e2", {"answer": "x"})


def test_pairwise_accuracy_per_component_mean_and_ties() -> None:
    pairs = qa_pairs(10, seed=1) + qa_pairs(4, seed=2, component="verify")
    tie = PreferencePair("verify", "t", {}, {"answer": "x"}, {"answer": "y"}, 0.0, 0.0, "tie")
    oracle = shorter_output_reward()  # not an oracle here: answers are single city names
    result = pairwise_accuracy(oracle, pairs + [tie])
    assert set(result.counts) == {"answer", "verify"} and result.counts["verify"][1] == 4
    assert result.mean == pytest.approx((result.accuracy("answer") + result.accuracy("verify")) / 2)
    with pytest.raises(DataError, match="no non-tie pairs"):
        pairwise_accuracy(oracle, [tie])


def test_pairwise_accuracy_keeps_counts_per_input() -> None:
    class FirstWins:  # pure-logic ranker: always prefers output_a
        def compare(self, pair):
            return 1

    def pair(example_id: str, label: str) -> PreferencePair:
        return PreferencePair("answer", example_id, {}, {"answer": "x"}, {"answer": "y"},
                              1.0 if label == "a" else 0.0, 0.0 if label == "a" else 1.0, label)

    # input e1: 3 pairs, all right; input e2: 1 pair, wrong
    result = pairwise_accuracy(FirstWins(), [pair("e1", "a")] * 3 + [pair("e2", "b")])
    assert result.counts["answer"] == (3.0, 4)
    assert result.by_input["answer"] == {"e1": (3.0, 3), "e2": (0.0, 1)}


def test_random_reward_is_deterministic_and_near_chance() -> None:
    pairs = qa_pairs(400, seed=3)
    r = RandomReward(seed=1)
    x = pairs[0]
    assert r.score("answer", x.inputs, x.output_a) == r.score("answer", x.inputs, x.output_a)
    assert 0.42 < pairwise_accuracy(r, pairs).mean < 0.58


def test_subsample_is_nested_and_keeps_every_component() -> None:
    pairs = qa_pairs(40, seed=1) + qa_pairs(8, seed=2, component="verify")
    small, big = subsample(pairs, 0.125), subsample(pairs, 0.25)
    assert {p.component for p in small} == {"answer", "verify"}
    assert {p.digest for p in small} <= {p.digest for p in big}
    assert len(subsample(pairs, 1.0)) == 48 and len(small) == 5 + 1


def test_data_efficiency_rows() -> None:
    train, test = qa_pairs(80, seed=1), qa_pairs(40, seed=2)
    rows = data_efficiency(
        lambda: LocalRewardModel(HashingBackbone(), {}, TrainConfig()), train, test
    )
    assert list(rows) == [0.125, 0.25, 0.5, 1.0]
    assert rows[1.0] >= 0.95 and all(0.0 <= v <= 1.0 for v in rows.values())


def test_compare_batch_matches_compare() -> None:
    model = LocalRewardModel(HashingBackbone(), {}, TrainConfig(epochs=5))
    pairs = qa_pairs(6, seed=1) + qa_pairs(3, seed=2, component="verify")
    model.fit(pairs)
    batched = model.compare_batch(pairs)
    assert batched == pytest.approx([model.compare(p) for p in pairs], abs=1e-6)


@pytest.mark.llm
def test_llm_judge_with_the_local_llm() -> None:
    """The real local LLM answers in a form the judge parses (2 pairs, 1 example shown)."""
    from coalign.lm import make_lm

    lm = make_lm("llamacpp:qwen2.5-0.5b")
    try:
        judge = LLMJudgeRanker(lm, {"answer": "Answers the question"}, qa_pairs(3, seed=1), k=1)
        verdicts = [judge.compare(p) for p in qa_pairs(2, seed=2)]
    finally:
        lm.close()
    assert all(v in (-1.0, 0.0, 1.0) for v in verdicts)
    assert judge.unparsed == 0
