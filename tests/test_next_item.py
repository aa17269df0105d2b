import csv
import math
import random

import numpy as np
import pytest
import torch

from coalign.component import ItemDecider, PolicyComponent
from coalign.component._decider import FEATURES, named_pick
from coalign.costs import CostAccount
from coalign.data import DataError, load_amazon_sessions
from coalign.errors import ConfigError
from coalign.lm import LlamaCpp
from coalign.optimize import LocalView, ReinforceWeightsOptimizer, WeightsValue
from coalign.rewards import BaseRewardModel, HashingBackbone
from coalign.runtime import Runtime, Sampling
from coalign.system import System
from coalign.systems import SYSTEMS, next_item
from coalign.task import Task
from coalign.testing.pytest_optimizers import choose

# --- data -------------------------------------------------------------------------------------


def test_reference_split_sizes_and_fields():
    test = load_amazon_sessions(split="test")
    train, val = load_amazon_sessions(split="train"), load_amazon_sessions(split="val")
    # per file: the last 20% is test (120 -> 24, 374 -> 75); 85% of the rest is train
    assert (len(train), len(val), len(test)) == (335, 60, 99)
    everything = load_amazon_sessions(split=None)
    assert len(everything) == 494
    assert len({e.id for e in everything}) == 494
    assert {e.id for e in train}.isdisjoint({e.id for e in test})
    first = test[0]
    assert first.id == "amazon/en/97"
    assert len(first.inputs["choices"]) == 4 and first.target in {"0", "1", "2", "3"}
    assert first.inputs["session"][0] == "Lego City Undercover (PS4)"
    six = {"english", "german", "spanish", "french", "italian", "japanese"}
    for part in (train, val, test):
        assert {e.meta["language"] for e in part} == six  # cut per language
    assert len(load_amazon_sessions(split="test", languages="english")) == 24
    # the reference's own cut (per file) leaves an all-Italian validation set
    reference = load_amazon_sessions(split="val", stratify=False)
    assert len(reference) == 60 and {e.meta["language"] for e in reference} == {"italian"}


def _write(path, rows):
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["question", "choices", "answer"])
        writer.writerows(rows)
    return path


GOOD_Q = "A user clicked these.\nProduct Sequence: \nRed mug\nBlue mug\n"


@pytest.mark.parametrize(("row", "message"), [
    (["no sequence here", "['a', 'b']", "0"], "line 2: field 'question' has no"),
    ([GOOD_Q, "['a', 'b']", "2"], "line 2: field 'answer' must be an index into the 2"),
    ([GOOD_Q, "not a list", "0"], "line 2: field 'choices' is not a list literal"),
    ([GOOD_Q, "['only one']", "0"], "field 'choices' must list at least two"),
    (["Product Sequence:\n\n", "['a', 'b']", "0"], "field 'question' lists no products"),
])
def test_malformed_rows_are_one_line_errors(tmp_path, row, message):
    path = _write(tmp_path / "s.csv", [row])
    with pytest.raises(DataError, match=message) as info:
        load_amazon_sessions(path, split=None)
    assert "\n" not in str(info.value)


def test_own_file_json_choices_and_bad_arguments(tmp_path):
    path = _write(tmp_path / "mine.csv", [[GOOD_Q, '["x", "y", "z"]', "1"]] * 5)
    rows = load_amazon_sessions(path, split=None)
    assert rows[0].inputs == {"session": ["Red mug", "Blue mug"], "choices": ["x", "y", "z"]}
    assert rows[0].id == "amazon/mine/1" and rows[0].target == "1"
    assert len(load_amazon_sessions(path, split="test")) == 1
    (tmp_path / "cols.csv").write_text("q,c\n1,2\n")
    with pytest.raises(DataError, match="missing column"):
        load_amazon_sessions(tmp_path / "cols.csv")
    with pytest.raises(ConfigError, match="split"):
        load_amazon_sessions(split="dev")
    with pytest.raises(ConfigError, match="languages"):
        load_amazon_sessions(languages="klingon")


# --- decider ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "n", "pick"), [
    ("[2] Blue mug - matches", 4, 1), ("Candidate 3 fits best", 4, 2), ("5", 4, None),
    ("the 2.5 kg pack", 4, None), ("", 4, None), ("12 pack, so 1", 4, 0),
])
def test_named_pick(text, n, pick):
    assert named_pick(text, n) == pick


def decider(**kw) -> ItemDecider:
    return ItemDecider("decider", backbone=HashingBackbone(64), **kw)


SESSION = ["red ceramic coffee mug", "blue ceramic coffee mug"]
CHOICES = ["garden hose reel", "green ceramic coffee mug", "dog leash", "paint pens"]


def inputs(assessment="[1] garden hose", interests="a ceramic coffee mug"):
    return {"session": SESSION, "interests": interests, "assessment": assessment,
            "choices": CHOICES}


def run(comp, x, sampling=None):
    system = System("d", [comp], ["session", "interests", "assessment", "choices"], "choice")
    trace = system.run("e", x, system.default_config(), Runtime(),
                       sampling={comp.name: sampling} if sampling else None)
    return trace.state["choice"]


def test_untrained_decider_follows_the_named_pick_then_similarity():
    comp = decider()
    assert isinstance(comp, PolicyComponent)
    assert run(comp, inputs("[1] garden hose")) == "0"  # the LLM's pick, even a poor one
    assert run(comp, inputs("3")) == "2"
    assert run(comp, inputs("no number here")) == "1"  # closest to the interests
    feats = comp.features(inputs("[4] pens"))
    assert feats.shape == (4, len(FEATURES))
    assert feats[:, 0].tolist() == [0.0, 0.0, 0.0, 1.0]
    assert int(torch.argmax(feats[:, 4])) == 1  # the mug is closest to the session


def test_the_decider_names_the_item_it_picked_for_its_local_reward():
    comp = decider()
    system = System("d", [comp], ["session", "interests", "assessment", "choices"], "choice")
    x = inputs("3")
    trace = system.run("e", x, system.default_config(), Runtime())
    assert trace.step("decider").outputs == {"choice": "2", "item": "dog leash"}
    module = comp.module(comp.params["scorer"].default)
    drawn = comp.sample(module, x, random.Random(0))
    assert drawn["item"] == CHOICES[int(drawn["choice"])]


def test_decider_policy_is_a_distribution_and_draws_are_seeded():
    comp = decider()
    module = comp.module(comp.params["scorer"].default)
    x = inputs()
    total = sum(math.exp(comp.log_prob(module, x, {"choice": str(i)}).item()) for i in range(4))
    assert total == pytest.approx(1.0, abs=1e-5)
    draws = [run(comp, x, Sampling(1.0, s)) for s in range(40)]
    assert draws == [run(comp, x, Sampling(1.0, s)) for s in range(40)]
    assert len(set(draws)) > 1 and draws.count("0") > 8  # mostly the pick, not only
    with pytest.raises(ConfigError, match="not an index"):
        comp.log_prob(module, x, {"choice": "7"})
    with pytest.raises(ConfigError, match="no candidates"):
        run(comp, {**x, "choices": []})


class SimilarToSession(BaseRewardModel):
    """The decider's local reward in this test: 1 when it picks the candidate nearest the
    session (what the gold next item usually is in the real data)."""

    def score_batch(self, component, items):
        return np.array([float(y["choice"] == "1") for _, y in items])


def test_weights_optimizer_learns_to_overrule_a_bad_pick():
    comp = decider()
    system = System("d", [comp], ["session", "interests", "assessment", "choices"], "choice")
    rng = random.Random(3)
    search = []
    for _ in range(8):
        wrong = rng.choice([1, 3, 4])  # the profiler names a wrong candidate
        search.append(inputs(f"[{wrong}] because"))
    ctx = LocalView(Task(system, lambda p, e: 0.0), "decider", "scorer",
                       system.default_config(), search, SimilarToSession(), Runtime(),
                       random.Random(0), CostAccount(["decider"]))
    new = choose(ReinforceWeightsOptimizer(epochs=15, samples=4, seed=0), ctx)
    assert ctx.mean_reward(WeightsValue(ctx.current)) == 0.0
    assert isinstance(new, WeightsValue) and ctx.mean_reward(new) >= 0.75


def test_system_is_registered_with_three_components():
    task = SYSTEMS["next_item"]("qwen2.5-0.5b")
    assert [c.name for c in task.system.components] == [
        "session_analyzer", "candidate_profiler", "next_item_decider"]
    assert task.metric_name == "accuracy"
    example = load_amazon_sessions(split="test", limit=1)[0]
    assert task.metric(example.target, example) == 1.0
    assert task.metric(str((int(example.target) + 1) % 4), example) == 0.0


@pytest.mark.llm
@pytest.mark.slow
def test_next_item_runs_on_the_local_model():
    task = next_item()
    example = load_amazon_sessions(split="test", limit=1)[0]
    runtime = Runtime(lms={"qwen2.5-0.5b": LlamaCpp("qwen2.5-0.5b", n_ctx=1024)})
    trace = task.system.run(example.id, dict(example.inputs), task.system.default_config(),
                            runtime)
    assert trace.step("session_analyzer").outputs["interests"].strip()
    assert trace.step("candidate_profiler").outputs["assessment"].strip()
    assert trace.state["choice"] in {"0", "1", "2", "3"}


def test_next_item_table_builds_and_replays(tmp_path):
    """A next_item space builds with every LLM output recorded; on replay the decider (no LLM)
    runs as usual, so every config of the space has a reward on every session."""
    from coalign.systems._next_item import ANALYZE, PROFILE
    from coalign.tables import CandidateSpace, Samples, Table, build_table
    from tests.fakes import FakeLM

    sessions = load_amazon_sessions(split="val", limit=2)
    space = CandidateSpace(
        system="next_item", dataset="amazon", questions=tuple(e.id for e in sessions),
        params={"session_analyzer.prompt": ({"instruction": ANALYZE, "demos": []},
                                            {"instruction": "Name the product kind.",
                                             "demos": []}),
                "candidate_profiler.prompt": ({"instruction": PROFILE, "demos": []},)},
        options={"layout": "inputs_first"}, samples=Samples(0, 1.0))
    space.save(tmp_path)

    def reply(request) -> str:  # the analyzer's text, then a pick by the prompt's length
        text = request.messages[-1].content
        return "kitchen things" if "Name the product" in text else f"[{1 + len(text) % 4}]"

    build_table(tmp_path, level="greedy",
                lm_factory=lambda m: FakeLM(reply, name=f"llamacpp:{m}"))
    table = Table(tmp_path)
    assert [e.id for e in table.finished()] == [e.id for e in sessions]
    rewards = table.rewards()
    assert rewards.scores.shape == (2, 2)
    assert set(np.unique(rewards.scores)) <= {0.0, 1.0}
