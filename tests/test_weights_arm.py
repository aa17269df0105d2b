"""The portfolio loop's weights arm: CMA-ES over a small ``Weights`` param, replayed from the
configs validated so far, in the loop beside the global and local arms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from coalign.data import Example
from coalign.optimize import LoopSettings, Optimizer
from coalign.optimize._portfolio import arm_of, from_ledger
from coalign.optimize._weights_arm import (
    MAX_DIM,
    flatten,
    is_weights_step,
    next_vector,
    unflatten,
    weights_slots,
)
from coalign.rewards import HashingBackbone, LocalRewardModel
from coalign.runtime import Runtime
from coalign.store import RunStore
from tests.test_reranker import rerank_inputs
from tests.test_weights_optimizer import RerankLrf, rerank_task


def test_a_state_dict_round_trips_through_its_vector():
    state = {"b": torch.tensor([1.5, -2.0]), "a": torch.tensor([[0.25, 3.0], [4.0, 5.0]]),
             "c": torch.tensor(7.0)}
    vector = flatten(state)
    assert vector.tolist() == [0.25, 3.0, 4.0, 5.0, 1.5, -2.0, 7.0]  # names in order
    back = unflatten(state, vector)
    assert set(back) == set(state)
    assert all(back[k].shape == state[k].shape and torch.equal(back[k], state[k]) for k in state)
    assert back["a"].dtype == torch.float32


def _run_search(f, mean0, n, seed=0):
    """A run of ``n`` weights steps as the loop makes them: each step replays the search from
    the scores so far and evaluates the first vector not scored yet."""
    scores, asked = {}, []

    def key(x):
        return np.round(x, 12).tobytes()

    for _ in range(n):
        x = next_vector(mean0, scores, key, seed)
        assert key(x) not in scores  # never the same vector twice
        asked.append(x)
        scores[key(x)] = f(x)
    return asked, scores, key


def test_the_replayed_search_proposes_what_one_long_lived_search_would():
    from cmaes import CMA

    def f(x):
        return -float(np.sum((x - 2.0) ** 2))

    mean0 = np.zeros(3)
    asked, _, _ = _run_search(f, mean0, 25)
    cma = CMA(mean=mean0, sigma=1.0, seed=0)
    straight = []
    while len(straight) < 25:
        gen = [cma.ask() for _ in range(cma.population_size)]
        cma.tell([(x, -f(x)) for x in gen])
        straight += gen
    assert np.allclose(np.array(asked), np.array(straight[:25]))


def test_the_search_climbs_toward_the_best_weights():
    target = np.array([1.0, -2.0, 0.5, 3.0])

    def f(x):
        return -float(np.sum((x - target) ** 2))

    asked, scores, key = _run_search(f, np.zeros(4), 120)
    first = max(scores[key(x)] for x in asked[:8])
    best = max(scores.values())
    assert f(np.zeros(4)) < first < best and best > -0.05  # near the optimum


def test_a_search_that_converged_restarts_around_its_best():
    # a flat score: CMA-ES stops on flat fitness; the replay restarts instead of failing
    asked, _, _ = _run_search(lambda x: 0.0, np.zeros(2), 80)
    assert len({np.round(x, 12).tobytes() for x in asked}) == 80


def test_steps_of_the_weights_arm_are_told_apart_in_the_ledger():
    assert is_weights_step("*", "cma:reranker.scorer")
    assert not is_weights_step("*", "global") and not is_weights_step("reranker", "scorer")
    assert arm_of("*", "cma:reranker.scorer") == "weights"
    assert arm_of("*", "global") == "global" and arm_of("reranker", "scorer") == "local"


def _examples(prefix, n, seed):
    return [Example(f"{prefix}{i}", {"question": x["question"], "candidates": x["candidates"]},
                    x["answer"]) for i, x in enumerate(rerank_inputs(n, seed=seed))]


def _optimizer(path, iterations, seed=0, learned=False):
    """``learned``: every local reward is a fitted head, restored from its checkpoint on
    resume (``RerankLrf``'s synthetic reranker reward is not a checkpoint's)."""
    reward = (LocalRewardModel(HashingBackbone(64), {"reranker": "reorders passages",
                                                     "pick": "picks a level"})
              if learned else RerankLrf(HashingBackbone(64), {"pick": "picks a level"}))
    settings = LoopSettings(proposals="portfolio", iterations=iterations, search_size=6,
                            fresh_inputs=2, seed=seed)
    return Optimizer(rerank_task(hidden=0, dim=16), _examples("t", 8, 1), _examples("v", 8, 3),
                     Runtime(), RunStore(path), reward, settings)


def test_only_small_weights_params_are_the_arms(tmp_path):
    small = _optimizer(tmp_path / "small", 0)
    config = small.system.default_config()
    n = sum(int(t.numel()) for t in config["reranker"]["scorer"].values())
    assert 0 < n <= MAX_DIM
    assert weights_slots(small.system, small.targets, config, {}) == [("reranker", "scorer")]
    assert weights_slots(small.system, small.targets, config,
                         {("reranker", "scorer"): "frozen"}) == []  # chosen per input
    big = rerank_task()  # a hidden layer: more numbers than the arm searches
    targets = [(c.name, p) for c in big.system.components for p in c.params]
    assert weights_slots(big.system, targets, big.system.default_config(), {}) == []


def test_the_loop_takes_weights_steps_validated_in_full_and_resumes_them(tmp_path):
    straight = _optimizer(tmp_path / "straight", 14, learned=True)
    straight.run()
    rows = [r for _, _, r in straight.store.steps()]
    weights = [r for r in rows if is_weights_step(r["component"], r["param"])]
    assert weights, [(r["component"], r["param"]) for r in rows]
    n_val = len(straight.val)
    assert all(len(r["val_rewards"]) == n_val for r in weights)  # never stopped early
    arms, validated = from_ledger(straight.system, straight.store.steps())
    assert arms["weights"][0] == sum(r["step_state"] == "accepted" for r in weights)
    digests = [v.config.digest for v in validated]
    assert len(set(digests)) == len(digests)  # no config validated twice
    # killed after some steps, a new process resumes and decides as the uninterrupted run
    first = _optimizer(tmp_path / "killed", 6, learned=True)
    first.run()
    first.store.close()
    again = _optimizer(tmp_path / "killed", 14, learned=True)
    again.run()

    def decisions(opt):
        return [(r["component"], r["param"], r["step_state"], r["val_after"])
                for _, _, r in opt.store.steps()]

    assert decisions(again) == decisions(straight)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_weights_arm_finds_weights_that_put_the_answer_first(tmp_path, seed):
    opt = _optimizer(tmp_path, 30, seed=seed)
    start = None
    opt.prepare()
    start = opt.val_score
    opt.run()
    accepted = [r for r in opt.history if r.accepted and is_weights_step(r.component, r.param)]
    assert accepted and opt.val_score > start + 0.3


def test_a_linear_decider_is_searched_as_its_six_feature_weights():
    from coalign.component import ItemDecider
    from coalign.optimize._weights_arm import from_vector, to_vector

    decider = ItemDecider(backbone=HashingBackbone(16))
    spec = decider.params[decider.policy_param]
    state = spec.default
    vector = to_vector(decider, decider.policy_param, state)
    assert vector.tolist() == pytest.approx([1.0, 0.1, 0.0, 0.0, 0.0, 0.0])  # prior, tie folded
    moved = vector + np.array([0.5, -1.0, 2.0, 0.0, -0.3, 1.0])
    back = from_vector(decider, decider.policy_param, moved, state)
    assert to_vector(decider, decider.policy_param, back) == pytest.approx(moved)
    features = torch.randn(7, 6, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():  # the state scores every candidate as w · features
        got = spec.build(back)(features)
    assert got.numpy() == pytest.approx((features.double().numpy() @ moved), abs=1e-5)
    # a scorer with a hidden layer has no compact form: its whole state dict is searched
    deep = ItemDecider(backbone=HashingBackbone(16), hidden=4)
    deep_state = deep.params[deep.policy_param].default
    assert len(to_vector(deep, deep.policy_param, deep_state)) == sum(
        int(t.numel()) for t in deep_state.values())


def test_the_arm_stays_first_while_its_search_improves():
    from coalign.optimize._portfolio import Validated
    from coalign.optimize._weights_arm import from_vector, improving, population, to_vector

    system = rerank_task(hidden=0, dim=16).system
    slot = ("reranker", "scorer")
    comp, start = system.component("reranker"), system.default_config()
    origin = to_vector(comp, "scorer", start["reranker"]["scorer"])
    n = population(len(origin))

    def validated(means):
        out = []
        for i, m in enumerate(means):
            weights = from_vector(comp, "scorer", origin + 0.01 * (i + 1),
                                  start["reranker"]["scorer"])
            config = start.with_value(*slot, comp.params["scorer"].validate(weights))
            out.append(Validated(config, (m, m)))
        return out

    def first(means):
        return improving(system, [slot], validated(means), start)

    assert first([0.2] * n)  # the first generation is not complete yet
    assert not first([0.2] * (n + 1))  # a whole generation, nothing better than the start
    assert first([0.2] * (n + 1) + [0.3])  # the last generation's worth raised the best
    assert not first([0.2, 0.3] + [0.25] * n)  # its best is older than a generation
    other = start.with_value("pick", "level", 1)  # another search: the prompt's value moved
    assert improving(system, [slot], validated([0.2] * (n + 1)), other)
