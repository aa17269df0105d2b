import random

import numpy as np

from coalign.component import LLMComponent
from coalign.data import Example
from coalign.lm import CachedLM
from coalign.optimize import LoopSettings, Optimizer
from coalign.optimize._choice import (
    SELECTOR,
    RewardSelector,
    cost_penalized,
    option_scores,
    per_instance_proposal,
)
from coalign.params import Choice
from coalign.rewards import HashingBackbone, LocalRewardModel
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.system import System
from coalign.task import Task
from tests.fakes import FakeLM

OPTIONS = ("cheap", "strong")


def test_policy_when_the_local_reward_picks_differently_per_input():
    scores = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.5]])
    assert per_instance_proposal(scores, OPTIONS, "cheap", False, random.Random(0)) == SELECTOR


def test_best_global_option_once_the_policy_was_rejected():
    scores = np.array([[0.9, 0.1], [0.2, 0.8], [0.1, 0.7]])  # strong has the best mean
    assert per_instance_proposal(scores, OPTIONS, "cheap", False, random.Random(0),
                                 policy_rejected=True) == "strong"


def test_global_switch_when_one_option_wins_every_input():
    scores = np.array([[0.1, 0.9], [0.3, 0.8], [0.0, 0.2]])
    assert per_instance_proposal(scores, OPTIONS, "cheap", False, random.Random(0)) == "strong"
    # the option that already is the value: nothing to propose
    flipped = scores[:, ::-1]
    assert per_instance_proposal(flipped, OPTIONS, "cheap", False, random.Random(0)) == "cheap"


def test_policy_in_place_is_challenged_by_a_global_option():
    scores = np.array([[0.0, 9.0], [1.0, 8.0]])  # strong wins by far: sampled almost surely
    picks = {per_instance_proposal(scores, OPTIONS, "cheap", True, random.Random(s), tau=0.5)
             for s in range(20)}
    assert picks == {"strong"}
    assert per_instance_proposal(np.zeros((0, 2)), OPTIONS, "cheap", False,
                                 random.Random(0)) == "cheap"


class TableReward:
    """Scores (x, {"@model": o}) from a table keyed by the input's q."""

    def __init__(self, table):
        self.table = table

    def score_batch(self, component, items):
        return np.array([self.table[x["q"]][y["@model"]] for x, y in items])


def test_option_scores_shape_matches_inputs_by_options():
    reward = TableReward({"a": {"cheap": 1.0, "strong": 2.0}, "b": {"cheap": 3.0, "strong": 0.0}})
    got = option_scores(reward, "gen", "model", [{"q": "a"}, {"q": "b"}], OPTIONS)
    assert got.tolist() == [[1.0, 2.0], [3.0, 0.0]]
    assert option_scores(reward, "gen", "model", [], OPTIONS).shape == (0, 2)


def test_loop_switches_a_per_instance_choice_globally_when_one_model_always_wins(tmp_path):
    # the cheap model never gets the answer right: "always strong" is proposed and accepted as a
    # plain value, with no per-input selector left to run
    gen = LLMComponent("gen", ["q"], "answer", "Answer.", model=Choice(list(OPTIONS), "cheap",
                                                                       scope="per_instance"))
    task = Task(System("sel", [gen], ["q"], "answer"),
                lambda pred, ex: float(pred == "right"), "acc")
    lms = {"cheap": CachedLM(FakeLM(lambda r: "wrong"), tmp_path / "c.sqlite"),
           "strong": CachedLM(FakeLM(lambda r: "right"), tmp_path / "s.sqlite")}
    train = [Example(f"t{i}", {"q": f"train {i}"}, None) for i in range(6)]
    val = [Example(f"v{i}", {"q": f"val {i}"}, None) for i in range(4)]
    reward = LocalRewardModel(HashingBackbone(64), {"gen": "answers"})
    opt = Optimizer(task, train, val, Runtime(lms=lms), RunStore(tmp_path / "run"), reward,
                    LoopSettings(proposals="local", iterations=4, search_size=3, fresh_inputs=2,
                                 rollout_n=2, seed=0))
    history = opt.run()
    model_steps = [r for r in history if r.param == "model"]
    assert model_steps and model_steps[0].value == "strong" and model_steps[0].accepted
    assert opt.config["gen"]["model"] == "strong" and not opt.policies
    # the ledger shows what was compared: both options, the winner first
    step = next(r for t, _, r in opt.store.steps() if t == model_steps[0].step)
    assert [c["value"] for c in step["candidates"]] == ["strong", "cheap"]
    assert opt.val_score == 1.0


def test_cost_penalty_can_turn_the_pick_to_the_cheap_option():
    scores = np.array([[0.2, 0.5], [0.1, 0.9]])
    costs = {"cheap": 0.0, "strong": 1.0}
    assert cost_penalized(scores, OPTIONS, costs, 0.0) is scores
    cheap_enough = cost_penalized(scores, OPTIONS, costs, 0.5)
    assert np.allclose(cheap_enough, [[0.2, 0.0], [0.1, 0.4]])
    # the first input now prefers cheap, the second still strong: a per-input policy
    assert per_instance_proposal(cheap_enough, OPTIONS, "cheap", False,
                                 random.Random(0)) == SELECTOR
    selector = RewardSelector(TableReward({"a": {"cheap": 0.2, "strong": 0.5}}), costs, 0.5)
    assert selector.select("gen", "model", {"q": "a"}, OPTIONS, "cheap") == "cheap"
    assert RewardSelector(selector.reward).select("gen", "model", {"q": "a"}, OPTIONS,
                                                  "cheap") == "strong"


def test_a_run_config_makes_a_global_choice_per_instance(tmp_path):
    """``per_instance: [retriever.k]`` on the committed HotpotQA table fixture: the retriever's
    k becomes a per-input choice the loop can hand to a selector; anything but a Choice param
    is refused in one line before the run dir exists."""
    from pathlib import Path

    import pytest

    from coalign.errors import ConfigError
    from coalign.job import Job, parse_run_config

    fixture = Path(__file__).parent / "fixtures" / "tables" / "multihop_qa_8q"
    raw = {"system": "multihop_qa", "data": "hotpotqa", "lm": f"replay:{fixture}",
           "backbone": "hashing", "split": {"train": 3, "val": 3, "test": 2},
           "budget": {"iterations": 0, "rollout_n": 0}, "per_instance": ["retriever.k"]}
    job = Job.open(parse_run_config(raw), tmp_path / "run")
    assert job.task.system.component("retriever").params["k"].scope == "per_instance"
    assert job.task.system.component("retriever").params["query"].scope == "global"
    job.store.close()
    for slot, why in (("retriever.nope", "no such param"),
                      ("answer_generator.prompt", "a text param"),
                      ("nobody.k", "unknown component")):
        with pytest.raises(ConfigError, match=f"run config field 'per_instance': .*{why}"):
            Job.open(parse_run_config({**raw, "per_instance": [slot]}), tmp_path / "bad")
        assert not (tmp_path / "bad").exists()
