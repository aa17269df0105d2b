import pytest

from coalign.component import FunctionComponent
from coalign.data import Example
from coalign.optimize._baselines import grid_search, random_search
from coalign.params import Choice
from coalign.runtime import Runtime
from coalign.system import System
from coalign.task import Task


def grid_task():
    a = FunctionComponent("a", lambda x, c, ctx: {"u": c["p"]}, ["q"], ["u"],
                          params={"p": Choice([0, 1, 2])})
    b = FunctionComponent("b", lambda x, c, ctx: {"v": x["u"] * 10 + c["r"]}, ["u"], ["v"],
                          params={"r": Choice([0, 5])})
    return Task(System("g", [a, b], ["q"], "v"), lambda p, e: float(p), "v")


VAL = [Example(f"v{i}", {"q": i}, None) for i in range(4)]


def test_grid_search_finds_the_best_within_budget():
    res = grid_search(grid_task(), VAL, Runtime(), budget_runs=100)
    assert res.best_score == 25.0 and len(res.tried) == 6
    assert res.equiv_runs == pytest.approx(6 * 4)
    capped = grid_search(grid_task(), VAL, Runtime(), budget_runs=9)
    assert len(capped.tried) == 2 and capped.equiv_runs <= 9


def test_random_search_respects_budget_and_keeps_strict_best():
    res = random_search(grid_task(), VAL, Runtime(), budget_runs=40, seed=3)
    assert res.equiv_runs <= 40 and len(res.tried) == 10
    assert res.best_score == max(s for _, s in res.tried)
    again = random_search(grid_task(), VAL, Runtime(), budget_runs=40, seed=3)
    assert again.tried == res.tried  # seeded


def test_baselines_search_a_per_instance_choice_as_a_global_option():
    # a baseline has no per-input selector, but "always the strong option" is in its space
    pick = FunctionComponent("pick", lambda x, c, ctx: {"u": c["m"]}, ["q"], ["u"],
                             params={"m": Choice([0, 3], 0, scope="per_instance")})
    task = Task(System("p", [pick], ["q"], "u"), lambda p, e: float(p), "u")
    assert grid_search(task, VAL, Runtime(), budget_runs=100).best["pick"]["m"] == 3
    res = random_search(task, VAL, Runtime(), budget_runs=40, seed=0)
    assert res.best_score == 3.0 and res.best["pick"]["m"] == 3


def test_every_scored_config_is_reported_as_it_finishes():
    seen = []
    res = random_search(grid_task(), VAL, Runtime(), budget_runs=40, seed=3,
                        on_trial=lambda *a: seen.append(a))
    assert [(d, s) for d, s, _ in seen] == res.tried
    assert [e for _, _, e in seen] == [4.0 * i for i in range(1, 11)]  # equiv runs so far
    seen.clear()
    res = grid_search(grid_task(), VAL, Runtime(), budget_runs=9,
                      on_trial=lambda *a: seen.append(a))
    assert [(d, s) for d, s, _ in seen] == res.tried
