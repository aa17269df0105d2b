"""The portfolio loop: its score model of validation, the arm draw, and the loop that uses
them (global steps first, local rewards paid lazily, resume with the same decisions)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from coalign.optimize import BudgetSpec
from coalign.optimize._portfolio import Axes, pick_arm, record
from coalign.optimize._surrogate import ENUMERATE, Observation, fit
from tests.test_optimize_loop import make_optimizer, writer_lm


def _world(sizes, effects, n=30, noise=0.0, seed=0):
    """Per-input rewards of every config of an additive world (input effects included)."""
    rng = np.random.default_rng(seed)
    inputs = rng.normal(0.0, 0.3, n)
    out = {}
    for picks in itertools.product(*(range(k) for k in sizes)):
        level = sum(effects[s][v] for s, v in enumerate(picks))
        out[picks] = tuple((level + inputs + rng.normal(0.0, noise, n)).tolist())
    return out


def _obs(world, picks_list):
    return [Observation(str(p), p, world[p]) for p in picks_list]


def test_an_additive_world_is_recovered_for_configs_never_validated():
    sizes, effects = (3, 2, 2), [[0.0, 0.2, 0.1], [0.0, -0.1], [0.0, 0.05]]
    world = _world(sizes, effects, noise=0.01)
    seen = [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1)]
    model = fit(sizes, _obs(world, seen))
    base = np.mean(world[(0, 0, 0)])
    for picks in [(1, 0, 1), (2, 1, 1), (2, 1, 0)]:  # never validated
        want = base + sum(effects[s][v] for s, v in enumerate(picks))
        assert model.mean(picks) == pytest.approx(want, abs=0.02)
        assert model.sd(picks) > model.sd(picks, str(picks)) or str(picks) not in model.observed


def test_a_config_that_won_by_noise_is_shrunk_toward_what_its_values_did_elsewhere():
    sizes, effects = (4, 4), [[0.0] * 4, [0.0] * 4]  # nothing matters
    world = dict(_world(sizes, effects, noise=0.05))
    lucky = (3, 3)
    world[lucky] = tuple(r + 0.15 for r in world[lucky])  # one config ahead by chance
    model = fit(sizes, _obs(world, list(world)))
    own = float(np.mean(world[lucky]))
    shrunk = model.mean(lucky, str(lucky))
    others = [float(np.mean(r)) for p, r in world.items() if p != lucky]
    assert max(others) < shrunk < own  # still ahead, by less than its own mean says


def test_with_one_config_its_own_mean_is_its_expected_score():
    model = fit((2, 2), [Observation("a", (0, 0), (1.0, 0.0, 1.0, 0.0))])
    assert model.mean((0, 0), "a") == pytest.approx(0.5, abs=1e-6)


def test_thompson_never_proposes_an_excluded_config_and_says_when_none_is_left():
    sizes = (2, 3)
    world = _world(sizes, [[0.0, 0.1], [0.0, 0.1, 0.2]], noise=0.05)
    model = fit(sizes, _obs(world, [(0, 0), (1, 1)]))
    everything = set(itertools.product(range(2), range(3)))
    rng = np.random.default_rng(0)
    for left in range(1, 6):
        exclude = set(sorted(everything)[:-left])
        assert model.thompson(rng, lambda p, ex=exclude: p not in ex) in everything - exclude
    assert model.thompson(rng, lambda p: False) is None


def test_thompson_finds_the_best_region_of_a_space_too_large_to_enumerate():
    sizes = (6,) * 6  # 46,656 configs
    assert np.prod(sizes) > ENUMERATE
    effects = [[0.0, 0.0, 0.0, 0.0, 0.0, 0.3]] * 6
    rng = np.random.default_rng(1)
    seen = [tuple(int(v) for v in rng.integers(0, 6, 6)) for _ in range(60)]
    world = {p: tuple([sum(effects[s][v] for s, v in enumerate(p))] * 5) for p in seen}
    world = {p: tuple(r + 0.01 * i for i, r in enumerate(rs)) for p, rs in world.items()}
    model = fit(sizes, _obs(world, seen))
    picks = model.thompson(rng, lambda p: p not in seen)
    assert picks is not None and sum(v == 5 for v in picks) >= 5


def test_under_a_cost_cap_the_global_arm_proposes_only_configs_predicted_within_it():
    from coalign.component import FunctionComponent
    from coalign.optimize._portfolio import Validated, admissible, exhausted
    from coalign.params import Choice
    from coalign.system import System

    two = FunctionComponent("two", lambda x, c, ctx: {"y": c["a"] + c["b"]}, ["q"], ["y"],
                            params={"a": Choice([1, 2], 1), "b": Choice([1, 2], 1)})
    start = System("two", [two], ["q"], "y").default_config()
    axes = Axes((("two", "a", (1, 2)), ("two", "b", (1, 2))))
    # a value of 2 costs a second more than a value of 1, on either slot
    seen = [Validated(axes.config(start, p), (0.5,) * 4, 2.0 + sum(p))
            for p in [(0, 0), (1, 0), (0, 1)]]
    assert admissible(axes, seen, start, None)((1, 1))
    assert not admissible(axes, seen, start, 3.5)((1, 1))  # predicted at 4 s
    assert not admissible(axes, seen, start, None)((1, 0))  # validated already
    # the current config is never proposed, even when not among the validated ones (a
    # config accepted under a per-input selector is not)
    current = axes.config(start, (1, 1))
    assert not admissible(axes, seen, current, None)((1, 1))
    assert exhausted(axes, seen, start, 3.5) and not exhausted(axes, seen, start, 4.5)


def test_the_model_refuses_rewards_on_different_inputs():
    with pytest.raises(ValueError, match="same validation inputs"):
        fit((2,), [Observation("a", (0,), (1.0, 0.0)), Observation("b", (1,), (1.0,))])
    with pytest.raises(ValueError, match="at least one"):
        fit((2,), [])


def test_the_arm_with_more_accepted_steps_per_run_is_drawn_more_often():
    rng = np.random.default_rng(0)
    records = record(record({}, "global", False, 300.0), "local", True, 100.0)
    records = record(records, "local", True, 100.0)
    picks = [pick_arm(records, ["global", "local"], rng, prior_runs=30.0) for _ in range(400)]
    assert picks.count("local") > 300
    assert pick_arm(records, ["global"], rng, prior_runs=30.0) == "global"


def test_axes_map_configs_to_value_indices_and_back():
    from tests.test_optimize_loop import toy_task

    config = toy_task().system.default_config()
    axes = Axes((("pick", "level", (1, 2, 3)),))
    assert axes.picks(config) == (0,)
    assert axes.config(config, (2,))["pick"]["level"] == 3
    # a value outside the axis (a table's subset of the param's options) is outside the model
    assert Axes((("pick", "level", (2, 3)),)).picks(config) is None


def test_the_portfolio_loop_validates_before_paying_for_any_rollout(tmp_path):
    opt = make_optimizer(tmp_path, writer_lm(), iterations=3, proposals="portfolio")
    opt.prepare()
    assert opt.account.equivalent_runs("lrf_train") == 0  # no stage 1 before the first step
    history = opt.run()
    steps = opt.store.steps()
    # the toy's finite slot is pick.level (3 values, 2 effects): global steps come first
    assert [(r["component"], r["param"]) for _, _, r in steps[:2]] == [("*", "global")] * 2
    assert opt.config["pick"]["level"] == 3  # +0.1 a level: the global arm finds it
    assert all(len(r["val_rewards"]) == 4 for _, _, r in steps[:2])
    assert opt.account.equivalent_runs("lrf_train") == 0 or history[2].component != "*"


def test_local_steps_take_over_once_every_finite_config_was_validated(tmp_path):
    opt = make_optimizer(tmp_path, writer_lm(), iterations=8, proposals="portfolio")
    opt.run()
    comps = [r["component"] for _, _, r in opt.store.steps()]
    assert comps[:2] == ["*", "*"] and comps[2] != "*"
    assert opt.account.equivalent_runs("lrf_train") > 0  # paid when the first local step came
    assert opt.val_score > 1.0  # the writer's concise instruction found as well


def test_local_steps_move_what_the_global_arm_cannot_while_it_has_configs_left(tmp_path):
    import dataclasses

    from coalign.optimize._global_step import local_targets
    from coalign.optimize._portfolio import Validated

    opt = make_optimizer(tmp_path, writer_lm(), iterations=8, proposals="portfolio")
    opt.prepare()
    env, at = opt._env(), opt.at
    assert sorted(opt.targets) == [("pick", "level"), ("writer", "prompt")]
    # pick.level is the global arm's; the writer's text only the local arm can move
    assert local_targets(env, at) == [("writer", "prompt")]
    seen = tuple(Validated(at.config.with_value("pick", "level", v), (0.0,) * 4)
                 for v in (1, 2, 3))
    assert local_targets(env, dataclasses.replace(at, validated=seen[:2])) == [
        ("writer", "prompt")]
    # every level validated under the current writer: the local arm may move it too
    assert local_targets(env, dataclasses.replace(at, validated=seen)) == list(opt.targets)

    opt.run()
    validated, current = {opt.store.get_meta("portfolio_start")["config"]["pick"]["level"]}, 1
    for _, _, r in opt.store.steps():
        if r["component"] == "pick":  # a local step on the slot: only once all were seen
            assert validated == {1, 2, 3}
        if r.get("val_rewards"):
            validated.add(r["candidate"]["pick"]["level"])
        if r["step_state"] == "accepted" and r["component"] == "writer":
            validated = {current}  # a new writer prompt: new configs for the global arm
        if r["step_state"] == "accepted":
            current = r["candidate"]["pick"]["level"]
    assert any(r["component"] == "pick" for _, _, r in opt.store.steps())


def test_a_portfolio_run_resumed_after_a_kill_decides_as_an_uninterrupted_one(tmp_path):
    def decisions(opt):
        return [(t, r["component"], r["param"], r["step_state"], r["val_after"],
                 round(r["spent"], 6)) for t, _, r in opt.store.steps()]

    lm = writer_lm()
    straight = make_optimizer(tmp_path / "straight", lm, iterations=6, proposals="portfolio")
    straight.run()
    first = make_optimizer(tmp_path / "killed", lm, iterations=3, proposals="portfolio")
    first.run()
    first.store.close()  # the process ends here; a new one resumes from the store
    again = make_optimizer(tmp_path / "killed", lm, iterations=6, proposals="portfolio")
    again.run()
    assert decisions(again) == decisions(straight)
    assert again.at.arms == straight.at.arms
    assert [v.config.digest for v in again.at.validated] == [
        v.config.digest for v in straight.at.validated]


def test_proposals_is_a_budget_field_of_the_run_config():
    assert BudgetSpec().proposals == "portfolio"  # the default since the next_item fix
    assert BudgetSpec(proposals="local").proposals == "local"
    assert BudgetSpec(proposals="portfolio").proposals == "portfolio"
    with pytest.raises(ValueError):
        BudgetSpec(proposals="global")


def test_a_portfolio_run_never_validates_one_config_twice(tmp_path):
    """The local arm skips a value whose config the global arm validated already: the same
    config re-run on the same validation set says nothing new and costs a full validation."""
    from coalign.config import SystemConfig

    opt = make_optimizer(tmp_path, writer_lm(), iterations=10, proposals="portfolio")
    opt.run()
    seen = [opt.store.get_meta("portfolio_start")["config"]]
    for _, _, r in opt.store.steps():
        if r.get("val_rewards"):
            seen.append(r["candidate"])
    digests = [SystemConfig.from_json(opt.system, c).digest for c in seen]
    assert len(seen) > 3 and len(set(digests)) == len(digests)
