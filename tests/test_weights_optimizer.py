import dataclasses
import json
import random

import numpy as np
import pytest
import torch

from coalign.component import FunctionComponent
from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.data import Example
from coalign.errors import ConfigError
from coalign.optimize import (
    LocalView,
    LoopSettings,
    Optimizer,
    ReinforceWeightsOptimizer,
    WeightsValue,
)
from coalign.params import Choice, Weights
from coalign.rewards import BaseRewardModel, HashingBackbone, LocalRewardModel
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.system import System
from coalign.task import Task
from coalign.testing.pytest_optimizers import choose
from tests.test_reranker import answer_first, rerank_inputs, reranker


class AnswerFirstReward(BaseRewardModel):
    """The reranker's LRF in these tests: 1 when the answer passage comes first."""

    def score_batch(self, component, items):
        return np.array([answer_first(x, y) for x, y in items])


def strip(inputs):
    return [{"question": x["question"], "candidates": x["candidates"]} for x in inputs]


def context(search, seed=0):
    system = System("r", [reranker()], ["question", "candidates"], "passages")
    return LocalView(Task(system, lambda p, e: 0.0), "reranker", "scorer",
                        system.default_config(), search, AnswerFirstReward(), Runtime(),
                        random.Random(seed), CostAccount(["reranker"]))


def held_out_reward(ctx, value):
    other = context(strip(rerank_inputs(12, seed=7)[8:]))
    return other.mean_reward(WeightsValue(value))


def test_reinforce_raises_the_local_reward_of_default_weights():
    ctx = context(strip(rerank_inputs(8, seed=1)))
    opt = ReinforceWeightsOptimizer(epochs=12, samples=4, seed=0)
    new = choose(opt, ctx)
    assert isinstance(new, WeightsValue)
    before, after = ctx.mean_reward(WeightsValue(ctx.current)), ctx.mean_reward(new)
    assert before == 0.0  # the answer passage is never first in the incoming order
    assert after >= 0.75
    assert held_out_reward(ctx, new) >= 0.75  # a scorer, not a memorized order
    assert opt.curve[-1] > opt.curve[0] + 0.5
    # every draw is one component execution, plus the greedy before/after comparison
    assert ctx.account.executed["local_search"]["reranker"] == 12 * 8 * 4 + 2 * 8
    again = choose(ReinforceWeightsOptimizer(epochs=12, samples=4, seed=0),
                   context(strip(rerank_inputs(8, seed=1))))
    assert again.to_json() == new.to_json()  # seeded


def test_ppo_clip_variant_also_learns():
    ctx = context(strip(rerank_inputs(8, seed=1)))
    opt = ReinforceWeightsOptimizer(epochs=6, ppo=True, ppo_epochs=4)
    new = choose(opt, ctx)
    assert ctx.mean_reward(new) >= 0.75


def test_no_gain_keeps_the_current_weights():
    class Flat(BaseRewardModel):
        def score_batch(self, component, items):
            return np.zeros(len(items))

    ctx = context(strip(rerank_inputs(4)))
    ctx = dataclasses.replace(ctx, reward=Flat())
    assert choose(ReinforceWeightsOptimizer(epochs=2), ctx) is ctx.current


def test_weights_need_a_policy_component():
    comp = FunctionComponent("f", lambda x, c, ctx: {"y": 0}, ["x"], ["y"],
                             params={"w": Weights(lambda: torch.nn.Linear(2, 1))})
    system = System("s", [comp], ["x"], "y")
    ctx = LocalView(Task(system, lambda p, e: 0.0), "f", "w", system.default_config(),
                       [{"x": 1}], AnswerFirstReward(), Runtime(), random.Random(0),
                       CostAccount(["f"]))
    with pytest.raises(ConfigError, match="PolicyComponent"):
        choose(ReinforceWeightsOptimizer(), ctx)
    with pytest.raises(ConfigError, match="samples"):
        ReinforceWeightsOptimizer(samples=1)


def test_optimized_weights_round_trip_through_the_config_json():
    ctx = context(strip(rerank_inputs(8, seed=1)))
    new = choose(ReinforceWeightsOptimizer(epochs=8), ctx)
    system = ctx.task.system
    config = ctx.config.with_value("reranker", "scorer", new)
    text = json.dumps(config.to_json())
    back = SystemConfig.from_json(system, json.loads(text))
    assert back.digest == config.digest
    restored = back["reranker"]["scorer"]
    assert all(torch.equal(restored[k], new[k]) for k in new)
    x = strip(rerank_inputs(3, seed=5))
    assert [system.run_component("reranker", i, back, Runtime()).outputs for i in x] == \
        [system.run_component("reranker", i, config, Runtime()).outputs for i in x]
    assert set(new.to_json()) == {"weights_sha256", "n_parameters"}  # compact in ledgers


class RerankLrf(LocalRewardModel):
    """A fitted LRF for the choice component; the synthetic reward for the reranker."""

    def score_batch(self, component, items):
        if component == "reranker":
            return AnswerFirstReward().score_batch(component, items)
        return super().score_batch(component, items)

    def can_score(self, component):
        return component == "reranker" or super().can_score(component)


def rerank_task(**reranker_kw):
    def read(x, c, ctx):
        first = (x["passages"] or [""])[0]
        return {"result": {"answer": first.split()[-1], "level": x["level"]}}

    pick = FunctionComponent("pick", lambda x, c, ctx: {"level": c["level"]}, ["question"],
                             ["level"], params={"level": Choice([0, 1])})
    reader = FunctionComponent("reader", read, ["passages", "level"], ["result"])
    system = System("rr", [reranker(**reranker_kw), pick, reader], ["question", "candidates"],
                    "result")
    return Task(system, lambda p, e: float(p["answer"] == e.target) + 0.1 * p["level"], "acc")


def test_loop_uses_the_weights_optimizer_and_the_gate(tmp_path):
    def examples(prefix, n, seed):
        return [Example(f"{prefix}{i}", {"question": x["question"],
                                         "candidates": x["candidates"]}, x["answer"])
                for i, x in enumerate(rerank_inputs(n, seed=seed))]

    reward = RerankLrf(HashingBackbone(64), {"pick": "picks a level"})
    settings = LoopSettings(proposals="local", iterations=4, search_size=6, fresh_inputs=2, seed=2)
    opt = Optimizer(rerank_task(), examples("t", 8, 1), examples("v", 6, 3), Runtime(),
                    RunStore(tmp_path), reward, settings)
    assert isinstance(opt.optimizers["weights"], ReinforceWeightsOptimizer)
    history = opt.run()
    steps = [r for r in history if r.component == "reranker"]
    assert steps and any(r.accepted for r in steps)
    assert opt.val_score > 1.0  # answers found (1.0 each) on top of the level bonus
    accepted = next(r for r in steps if r.accepted)
    assert set(accepted.value) == {"weights_sha256", "n_parameters"}
    _, _, row = opt.store.steps()[-1]
    restored = SystemConfig.from_json(opt.system, row["config"])
    assert restored.digest == opt.config.digest


def test_stage1_collects_pairs_for_the_reranker_and_fits_its_head(tmp_path):
    # sampled orders (Plackett-Luce draws at the rollout temperature) are the reranker's candidates
    inputs = rerank_inputs(8, seed=1)
    train = [Example(f"t{i}", {"question": x["question"], "candidates": x["candidates"]},
                     x["answer"]) for i, x in enumerate(inputs)]
    reward = LocalRewardModel(HashingBackbone(64), {"reranker": "reorders passages",
                                                     "pick": "picks a level"})
    opt = Optimizer(rerank_task(), train, train[:3], Runtime(), RunStore(tmp_path), reward,
                    LoopSettings(proposals="local", iterations=0, rollout_n=3, seed=0))
    opt.prepare()
    pairs = opt.store.pairs("reranker")
    assert pairs and all(p.component == "reranker" for p in pairs)
    decisive = [p for p in pairs if not p.is_tie]
    assert decisive and all((p.reward_a > p.reward_b) == (p.label == "a") for p in decisive)
    assert all(p.output_a != p.output_b for p in pairs)  # distinct sampled orders
    scores = opt.reward.score_batch("reranker", [(p.inputs, p.chosen) for p in decisive])
    assert np.isfinite(scores).all()
