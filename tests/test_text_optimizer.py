import dataclasses
import random
from types import SimpleNamespace

from coalign.optimize import LoopSettings
from coalign.optimize._text import EDITS, TextOptimizer, rollout_winners
from coalign.params import TextValue
from tests.fakes import FakeLM
from tests.test_optimize_loop import make_optimizer


def test_edit_source_never_repeats_an_edit_already_in_the_pool():
    opt, best = TextOptimizer(), TextValue("Write.")
    ctx, pool = SimpleNamespace(rng=random.Random(0)), {repr(best): (best, 0.0)}
    seen = []
    for _ in range(len(EDITS)):
        value = opt._from_edit(ctx, best, pool)
        assert value is not None and repr(value) not in pool
        pool[repr(value)] = (value, 0.0)
        seen.append(value.instruction)
    assert len(set(seen)) == len(EDITS)
    assert opt._from_edit(ctx, best, pool) is None  # every edit of `best` was scored


def test_alternatives_are_distinct_edits_of_the_current_value_and_seeded():
    current = TextValue("Write a summary. Be brief.", ({"q": "x", "draft": "y"},))
    opt = TextOptimizer()
    alts = opt.alternatives(current, random.Random(3), 4)
    assert len(alts) == 4 and len({a.instruction for a in alts}) == 4
    assert all(a.instruction != current.instruction and a.demos == current.demos for a in alts)
    assert alts == opt.alternatives(current, random.Random(3), 4)
    assert opt.alternatives(current, random.Random(3), 0) == ()
    assert opt.alternatives("not a text value", random.Random(3), 2) == ()
    assert len(opt.alternatives(current, random.Random(3), 100)) <= len(EDITS)


def test_stage1_rolls_out_edited_instructions_when_asked(tmp_path):
    # sampled drafts are always "bad": only an instruction asking for concision writes "good",
    # so every decisive writer pair must come from the alternative instructions
    def answer(r):
        if r.temperature > 0:
            return "bad"
        return "good" if "concise" in r.messages[0].content.lower() else "bad"

    plain = make_optimizer(tmp_path / "plain", FakeLM(answer), iterations=0)
    plain.prepare()
    assert not [p for p in plain.store.pairs("writer") if not p.is_tie]

    opt = make_optimizer(tmp_path / "alt", FakeLM(answer), iterations=0)
    opt.s = LoopSettings(**{**vars(opt.s), "text_alternatives": len(EDITS)})
    opt.prepare()
    decisive = [p for p in opt.store.pairs("writer") if not p.is_tie]
    assert decisive and all(p.chosen["draft"] == "good" for p in decisive)
    assert opt.reward.can_score("writer")


def test_demos_come_from_rollout_winners_ranked_by_the_local_reward():
    class ByLength:  # pure-logic stand-in for the LRF: longer drafts score higher
        def score_batch(self, component, items):
            return [len(y["draft"]) for _, y in items]

    winners = [({"q": "a"}, {"draft": "long winning draft"}), ({"q": "b"}, {"draft": "mid one"}),
               ({"q": "a"}, {"draft": "longest draft of them all, same input"})]
    ctx = SimpleNamespace(component="writer", reward=ByLength(), rollout_winners=winners,
                          outputs_under=lambda value: [({"q": "c"}, {"draft": "x"})])
    value = TextOptimizer(n_demos=2)._from_demos(ctx, TextValue("Write."), {})
    # best first, one demo per input: input "a"'s second output is outranked by its first
    assert value.demos == ({"q": "a", "draft": "longest draft of them all, same input"},
                           {"q": "b", "draft": "mid one"})


def test_rollout_winners_are_the_chosen_outputs_of_stored_pairs(tmp_path):
    opt = make_optimizer(tmp_path, FakeLM(lambda r: "good" if r.sample_index % 2 else "bad"),
                         iterations=0)
    opt.prepare()
    winners = rollout_winners(opt.store, "writer")
    assert winners and all(y == {"draft": "good"} for _, y in winners)
    assert len({x["q"] for x, _ in winners}) == len(winners)  # one per train input
    # the best output per input, over every pair it won
    assert all(y == {"level": 3} for _, y in rollout_winners(opt.store, "pick"))


def test_proposals_that_copy_the_example_or_the_meta_prompt_are_dropped():
    from coalign.optimize._text import clean_proposal

    example = ("question: Who has won more Grand Slam women's doubles titles, Lisa Raymond or "
               "Liezel Huber?")
    # seen in a real run: a training question proposed as the "instruction"
    leaked = "Question: Who has won more Grand Slam women's doubles titles, Lisa Raymond or"
    assert clean_proposal(leaked, example) is None
    assert clean_proposal("Do not mention names or facts from the example.", example) is None
    assert clean_proposal("short", example) is None
    assert clean_proposal('"Write the short final answer from the facts." (score -0.134)',
                          example) == "Write the short final answer from the facts."
    assert clean_proposal("Answer with the name of the person the question asks about.",
                          example) == "Answer with the name of the person the question asks about."


def test_paraphrased_questions_and_echoed_outputs_are_no_instructions():
    from coalign.optimize._text import clean_proposal

    # seen in the PubMedQA run: the proposer rewords the example's question (no six words in a
    # row in common), and the gate accepted it on 24 validation questions
    example = ("Question: Double balloon enteroscopy: is it efficacious and safe in a community "
               "setting?\nFindings: The study results indicate that double balloon enteroscopy "
               "is not efficacious and safe in a community setting.")
    current = "Answer the research question with exactly one word: yes, no, or maybe."
    for leaked in ("Do double balloon enteroscopy results in safe and efficacious DBE surgery in "
                   "a community setting?",
                   "Do balloon enteroscopy perform as well in a community setting as in a "
                   "laboratory",  # a question without its question mark: by shared words
                   "{'answer': 'maybe'}"):
        assert clean_proposal(leaked, example, current) is None, leaked
    # general instructions share a few words with any example, and all of the current one's
    for general in ("Write an answer based on the study results provided in the findings.",
                    "Answer the research question with one word after weighing the findings.",
                    "Answer the research question with exactly one word: yes, no, or maybe. "
                    "Decide from the direction of the effect in the study results."):
        assert clean_proposal(general, example, current) == general


def test_a_text_value_behaving_like_a_rejected_one_counts_as_rejected(tmp_path):
    # writer_lm writes "good" iff the instruction mentions concision: any such rewording has the
    # rejected value's outputs on the search sample, so it is not worth another validation
    from coalign.costs import CostAccount
    from coalign.optimize import LocalView
    from coalign.optimize._kinds import KINDS
    from coalign.optimize._outcome import tried
    from coalign.optimize._step import Position, closed
    from tests.test_optimize_loop import make_optimizer, writer_lm

    opt = make_optimizer(tmp_path, writer_lm(), iterations=0)
    rejected = TextValue("Be concise.")
    view = LocalView(opt.task, "writer", "prompt", opt.config, [{"q": f"q{i}"} for i in range(3)],
                     None, opt.runtime, random.Random(0), CostAccount(["writer"]))

    def is_closed(value, rejections):
        at = Position(opt.config, {}, {}, frozenset(rejections), None)
        return closed(opt._env(), at, view, KINDS["text"], value, [()])

    seen = {tried("writer", "prompt", rejected)}
    assert is_closed(rejected, seen)
    assert is_closed(TextValue("Write concisely."), seen)  # other words, same outputs
    assert not is_closed(TextValue("Write at length."), seen)  # different outputs
    assert not is_closed(TextValue("Write concisely."), set())
    # the rule is the text kind's: a choice with the same outputs is not closed by it
    assert not KINDS["choice"].same_outputs_rejected


def test_demos_with_distinct_outputs_are_the_next_candidate_after_the_best_ranked():
    # two "yes" demos pull a small model towards "yes": once the best-ranked set is scored, the
    # best "no" replaces the second "yes"
    class Listed:
        def score_batch(self, component, items):
            return [0.9, 0.8, 0.7, 0.6][:len(items)]

    winners = [({"q": "a"}, {"label": "yes"}), ({"q": "b"}, {"label": "yes"}),
               ({"q": "c"}, {"label": "no"}), ({"q": "d"}, {"label": "no"})]
    ctx = SimpleNamespace(component="answerer", reward=Listed(), rollout_winners=winners,
                          outputs_under=lambda value: [])

    def demo_sets(n_demos: int) -> list[list[str]]:
        opt, pool, sets = TextOptimizer(n_demos=n_demos), {}, []
        while (value := opt._from_demos(ctx, TextValue("Answer."), pool)) is not None:
            pool[repr(value)] = (value, 0.0)
            sets.append([d["q"] for d in value.demos])
        return sets

    assert demo_sets(2) == [["a", "b"], ["a", "c"]]
    # too few distinct outputs: the best repeats fill the remaining places in score order
    assert demo_sets(3) == [["a", "b", "c"], ["a", "c", "b"]]
    assert demo_sets(1) == [["a"]]  # one demo: both sets are the same candidate


def _winners_seen(tmp_path, rollout_demos: bool) -> list[int]:
    """How many rollout winners each text proposal of a short run was shown."""
    opt = make_optimizer(tmp_path, FakeLM(lambda r: "good" if r.sample_index % 2 else "bad"),
                         iterations=3)
    opt.s = dataclasses.replace(opt.s, rollout_demos=rollout_demos)
    text = opt.optimizers["text"]
    seen: list[int] = []
    propose = text.propose
    text.propose = lambda view: seen.append(len(view.rollout_winners)) or propose(view)
    opt.run()
    return seen


def test_rollout_demos_switch_keeps_rollout_winners_from_text_proposals(tmp_path):
    on = _winners_seen(tmp_path / "on", True)
    off = _winners_seen(tmp_path / "off", False)
    assert on and max(on) > 0  # rule 12 on: the writer's proposals see the rollout winners
    assert off and max(off) == 0
