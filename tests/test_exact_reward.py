"""The exact local reward of a last component (``terminal_reward: exact``): the task metric on
the search inputs' own train examples, with no learned head and no stage-1 rollouts."""

from __future__ import annotations

import numpy as np
import pytest

from coalign.component import FunctionComponent
from coalign.data import Example
from coalign.errors import ConfigError
from coalign.optimize import LoopSettings, Optimizer
from coalign.optimize._exact import ExactReward, exact_components, has_reward, is_terminal
from coalign.params import Choice
from coalign.rewards import BaseRewardModel, HashingBackbone, LocalRewardModel
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.system import System
from coalign.task import Task


def _system(answer_scope: str = "global") -> System:
    """style (upstream, writes a hint) -> answer (last: writes the output)."""
    style = FunctionComponent("style", lambda x, c, ctx: {"hint": f"{c['tone']}:{x['q']}"},
                              ["q"], ["hint"], params={"tone": Choice(["plain", "terse"])})
    answer = FunctionComponent("answer", lambda x, c, ctx: {"out": c["pick"]}, ["hint"],
                               ["out"], params={"pick": Choice([0, 1, 2], scope=answer_scope)})
    return System("two", [style, answer], ["q"], "out")


def _task(system: System | None = None) -> Task:
    return Task(system or _system(), lambda p, e: float(p == e.target), "hit")


def _examples(prefix: str, n: int, target: int = 2) -> list[Example]:
    return [Example(f"{prefix}{i}", {"q": f"question {prefix}{i}"}, target) for i in range(n)]


class _Fixed(BaseRewardModel):
    def score_batch(self, component, items):
        return np.full(len(items), 7.0)


def test_only_the_last_component_with_global_params_is_exact():
    system = _system()
    assert is_terminal(system, "answer") and not is_terminal(system, "style")
    targets = [("style", "tone"), ("answer", "pick")]
    assert exact_components(system, targets, "exact") == {"answer"}
    assert exact_components(system, targets, "learned") == frozenset()
    assert exact_components(system, [("style", "tone")], "exact") == frozenset()
    # a per-instance param is picked at inference time, without a label: learned reward
    per_instance = _system("per_instance")
    assert exact_components(per_instance, [("answer", "pick")], "exact") == frozenset()
    with pytest.raises(ConfigError, match="terminal_reward must be 'exact' or 'learned'"):
        exact_components(system, targets, "oracle")


def test_the_exact_reward_is_the_metric_against_the_examples_behind_an_input():
    task = _task()
    a, b, c = (Example("a", {"q": "x"}, 1), Example("b", {"q": "x"}, 2),
               Example("c", {"q": "y"}, 2))
    # a and b reach the answer with the same input: an output's reward is their mean metric
    reward = ExactReward(task, "answer", [(a, {"hint": "h"}), (b, {"hint": "h"}),
                                          (c, {"hint": "k"})], _Fixed())
    scores = reward.score_batch("answer", [({"hint": "h"}, {"out": 1}),
                                           ({"hint": "h"}, {"out": 2}),
                                           ({"hint": "k"}, {"out": 2}),
                                           ({"hint": "k"}, {"out": 0})])
    assert scores.tolist() == [0.5, 0.5, 1.0, 0.0]
    assert reward.score("style", {"q": "x"}, {"hint": "h"}) == 7.0  # the learned one's
    with pytest.raises(ConfigError, match="outside the search sample"):
        reward.score_batch("answer", [({"hint": "new"}, {"out": 2})])


def test_an_exact_component_has_a_reward_without_a_head():
    learned = LocalRewardModel(HashingBackbone(32), {"style": "s", "answer": "a"})
    assert not learned.can_score("answer")
    assert has_reward(learned, "answer", {"answer"})
    assert not has_reward(learned, "answer", set())


def _run(tmp_path, mode: str, proposals: str = "local") -> Optimizer:
    reward = LocalRewardModel(HashingBackbone(32), {"style": "sets the tone",
                                                    "answer": "picks the answer"})
    settings = LoopSettings(proposals=proposals, iterations=4, search_size=3, fresh_inputs=2,
                            rollout_n=0, terminal_reward=mode, seed=1)
    opt = Optimizer(_task(), _examples("t", 6), _examples("v", 4), Runtime(),
                    RunStore(tmp_path / mode / proposals), reward, settings)
    opt.run()
    return opt


def _answer_runs(opt: Optimizer, phase: str) -> int:
    return opt.account.executed.get(phase, {}).get("answer", 0)


def test_the_loop_moves_the_last_component_by_its_metric_without_rollouts(tmp_path):
    exact, learned = _run(tmp_path, "exact"), _run(tmp_path, "learned")
    assert exact.config["answer"]["pick"] == 2 and exact.val_score == 1.0
    assert any(r.component == "answer" and r.accepted for r in exact.history)
    assert not exact.reward.can_score("answer")  # no head was fitted for it...
    assert learned.reward.can_score("answer")  # ...where the learned mode fitted one
    # ...on rollouts of the answer's options, which the exact mode does not pay for (its
    # answer runs in stage 1 are the style rollouts' downstream completions only)
    assert _answer_runs(learned, "lrf_train") > _answer_runs(exact, "lrf_train")
    assert _answer_runs(exact, "lrf_train") == exact.account.executed["lrf_train"]["style"]


def test_the_portfolio_loop_pays_no_stage1_rollouts_for_an_exact_component(tmp_path):
    opt = _run(tmp_path, "exact", "portfolio")
    assert "answer" not in opt.paid
    assert opt.val_score == 1.0


def _rerank_last(tmp_path, mode: str) -> Optimizer:
    """A reranker that is the last component: its small scorer is a weights-arm slot."""
    from coalign.optimize._weights_arm import weights_slots
    from tests.test_reranker import rerank_inputs, reranker

    system = System("rr", [reranker(hidden=0, dim=16)], ["question", "candidates"], "passages")
    task = Task(system, lambda p, e: float(e.target in p[0]), "first")

    def examples(prefix, n, seed):
        return [Example(f"{prefix}{i}", {"question": x["question"],
                                         "candidates": x["candidates"]}, x["answer"])
                for i, x in enumerate(rerank_inputs(n, seed=seed))]

    settings = LoopSettings(proposals="portfolio", iterations=6, search_size=6, fresh_inputs=2,
                            policy_samples=4, terminal_reward=mode, seed=0)
    opt = Optimizer(task, examples("t", 8, 1), examples("v", 8, 3), Runtime(),
                    RunStore(tmp_path / mode), LocalRewardModel(HashingBackbone(64), {
                        "reranker": "reorders passages"}), settings)
    assert weights_slots(system, opt.targets, system.default_config(), {}) == [
        ("reranker", "scorer")]
    return opt


def test_a_last_components_weights_are_trained_on_the_metric_not_searched_by_cma(tmp_path):
    from coalign.optimize._weights_arm import is_weights_step

    exact, learned = _rerank_last(tmp_path, "exact"), _rerank_last(tmp_path, "learned")
    for opt in (exact, learned):
        opt.prepare()
    start = exact.val_score
    exact.run()
    learned.run()
    # the local arm's policy gradient on the metric's reward of every draw, where the learned
    # mode's weights arm judges one validation score per candidate
    assert not any(is_weights_step(r.component, r.param) for r in exact.history)
    assert any(r.component == "reranker" and r.accepted for r in exact.history)
    assert exact.val_score > start
    assert any(is_weights_step(r.component, r.param) for r in learned.history)


def test_a_weights_param_may_name_its_own_learning_rate():
    import random

    import torch

    from coalign.component import ItemDecider
    from coalign.costs import CostAccount
    from coalign.optimize import ReinforceWeightsOptimizer
    from coalign.optimize._base import LocalView
    from coalign.params import Weights
    from tests.test_reranker import rerank_inputs, reranker

    with pytest.raises(ConfigError, match="Weights lr must be > 0"):
        Weights(lambda: torch.nn.Linear(2, 1), lr=0.0)
    assert ItemDecider(backbone=HashingBackbone(16)).params["scorer"].lr == 0.3

    def moved(lr):
        comp = reranker(hidden=0, dim=16)
        comp.params["scorer"].lr = lr
        system = System("rr", [comp], ["question", "candidates"], "passages")
        task = Task(system, lambda p, e: float(e.target in p[0]), "first")
        inputs = rerank_inputs(6, seed=1)
        sample = [(Example(f"t{i}", {"question": x["question"], "candidates": x["candidates"]},
                           x["answer"]), {"question": x["question"],
                                          "candidates": x["candidates"]})
                  for i, x in enumerate(inputs)]
        config = system.default_config()
        view = LocalView(task, "reranker", "scorer", config, [x for _, x in sample],
                         ExactReward(task, "reranker", sample, _Fixed()), Runtime(),
                         random.Random(0), CostAccount(["reranker"]))
        scored = ReinforceWeightsOptimizer(epochs=3, seed=0).propose(view)
        start, new = config["reranker"]["scorer"], scored[-1].value
        return max(float((new[k] - start[k]).abs().max()) for k in start)

    # Adam moves each number by about lr per step: 3 steps at 1.0 go far beyond 3 at 0.05
    assert moved(1.0) > 10 * moved(None)


def test_the_last_components_local_slots_go_first_while_they_improve(tmp_path):
    import dataclasses

    from coalign.optimize._global_step import exact_first, global_open
    from coalign.optimize._outcome import Tried, window_indices

    opt = _rerank_last(tmp_path, "exact")
    env, slot = opt._env(), ("reranker", "scorer")
    axes, _ = global_open(env, opt.at)
    assert exact_first(env, opt.at, [slot], axes) == [slot]
    # its training is carried on (``_carry``): one step not taken (rejected, or a window
    # that found nothing to change) does not shut it, two since the last accept do
    k, n = env.settings.search_size, len(env.train)
    first, second = window_indices(0, n, k), window_indices(1, n, k)
    one = frozenset({Tried(*slot, "w")})
    assert exact_first(env, dataclasses.replace(opt.at, rejected=one), [slot], axes) == [slot]
    two = one | {Tried(*slot, "w2")}
    assert exact_first(env, dataclasses.replace(opt.at, rejected=two), [slot], axes) == []
    once = dataclasses.replace(opt.at, unchanged={slot: first})
    assert exact_first(env, once, [slot], axes) == [slot]
    assert exact_first(env, dataclasses.replace(once, rejected=one), [slot], axes) == []
    twice = dataclasses.replace(opt.at, unchanged={slot: first | second})
    assert exact_first(env, twice, [slot], axes) == []
    learned = _rerank_last(tmp_path / "l", "learned")
    assert exact_first(learned._env(), learned.at, [slot], axes) == []
