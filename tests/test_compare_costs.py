"""Cost per query in comparisons: the cap, the model-choice baselines and the front (pure
logic on small reward/cost matrices)."""

import itertools

import numpy as np
import pytest

from coalign.compare import (
    MODEL_METHODS,
    REFERENCES,
    Lookup,
    always_cheapest,
    always_strongest,
    compare,
    draw_split,
    front,
    llm_selector,
    nsga2,
    random_search,
    tpe,
)
from coalign.optimize import Gate

SLOTS = ["gen.model", "gen.prompt", "fix.model"]


def model_lookup(n_questions: int = 60, seed: int = 0) -> Lookup:
    """gen.model (0 cheap, 1 strong) adds 0.4 reward and costs 3 s more; fix.model adds 0.1
    and costs 1 s more; gen.prompt option 1 adds 0.05 at no cost."""
    rng = np.random.default_rng(seed)
    index = np.array(list(itertools.product(range(2), range(2), range(2))))
    quality = 0.2 + 0.4 * index[:, 0] + 0.05 * index[:, 1] + 0.1 * index[:, 2]
    scores = (rng.random((len(index), n_questions)) < quality[:, None]).astype(float)
    cost = 1.0 + 3.0 * index[:, 0] + 1.0 * index[:, 2]
    costs = np.repeat(cost[:, None], n_questions, axis=1)
    return Lookup(scores, SLOTS, [2, 2, 2], index, costs)


def test_lookup_costs_cap_and_feasibility():
    lk = model_lookup()
    strongest = lk.config([1, 0, 1])
    assert lk.cost(strongest, [0, 1, 2]) == 5.0 and lk.cost(0, [0]) == 1.0
    assert lk.cap_of(0.5) == 2.5  # half the all-strongest config's cost
    capped = lk.with_cap(2.5)
    assert capped.cap == 2.5 and lk.cap is None
    assert capped.feasible(lk.config([0, 1, 1]), [0]) and not capped.feasible(strongest, [0])
    assert lk.feasible(strongest, [0])  # quality alone: everything is
    with pytest.raises(ValueError, match="costs shape"):
        Lookup(lk.scores, SLOTS, [2, 2, 2], lk.index, lk.costs[:, :3])


def test_fixed_model_baselines_read_strong_and_cheap_off_the_costs():
    lk = model_lookup()
    split = draw_split(60, (20, 20, 20), seed=0)
    strong = always_strongest(lk, split, 1000, 0)
    cheap = always_cheapest(lk, split, 1000, 0)
    assert [c for _, c, _ in strong.trials] == [0, lk.config([1, 0, 1])]
    assert [c for _, c, _ in cheap.trials] == [0]  # the start is already the cheapest
    assert strong.at(1000) == lk.config([1, 0, 1])


def test_llm_selector_allocates_models_greedily_and_keeps_prompts():
    lk = model_lookup(n_questions=400)
    split = draw_split(400, (100, 150, 150), seed=0)
    t = llm_selector(lk, split, 10_000, seed=0)
    assert lk.index[t.at(10_000)].tolist() == [1, 0, 1]  # both models upgraded, prompt kept
    assert all(lk.index[c][1] == 0 for _, c, _ in t.trials)
    # under a cap that affords only the generator's strong model
    capped = lk.with_cap(4.0)
    t = llm_selector(capped, split, 10_000, seed=0)
    picked = t.at(10_000, lambda c: capped.feasible(c, split.val))
    assert lk.index[picked].tolist() == [1, 0, 0]
    # a budget of two configs' validation stops it early
    assert len(llm_selector(lk, split, 300, seed=0).trials) == 2


def test_nsga2_and_tpe_under_a_cap_return_configs_within_it():
    lk = model_lookup(n_questions=200).with_cap(2.0)
    split = draw_split(200, (50, 75, 75), seed=1)
    for method in (nsga2, tpe):
        t = method(lk, split, 75 * 8, seed=0)
        assert t.trials[0][1] == 0
        picked = t.at(75 * 8, lambda c: lk.feasible(c, split.val))
        assert lk.cost(picked, split.val) <= 2.0
        assert lk.index[picked].tolist() == [0, 1, 1] or lk.index[picked][0] == 0


def test_front_keeps_the_non_dominated_configs_cheapest_first():
    lk = model_lookup(n_questions=400)
    points = front(lk, range(lk.n_configs), range(400))
    costs = [p.cost for p in points]
    qualities = [p.quality_score for p in points]
    assert costs == sorted(costs) and qualities == sorted(qualities)
    assert points[0].cost == 1.0 and points[-1].cost == 5.0
    assert all(lk.index[p.config][1] == 1 or lk.score(lk.config(
        [lk.index[p.config][0], 1, lk.index[p.config][2]]), range(400)) <= p.quality_score
        for p in points)


def test_a_capped_comparison_returns_only_configs_within_the_cap_and_records_costs():
    lk = model_lookup(n_questions=120).with_cap(2.5)
    methods = {"random search": (random_search, True), **MODEL_METHODS}
    result = compare(lk, sizes=(30, 40, 50), seeds=[0, 1, 2], budgets=[80, 400],
                     methods=methods)
    assert set(result.costs) == {*methods, *REFERENCES}
    for name in [*methods, "best on validation (exhaustive)", "best global config on test"]:
        for budget in (80, 400):
            assert all(c <= 2.5 for c in result.costs[name][budget]), name
    assert result.mean_cost("start config (unoptimized)", 400) == 1.0
    data = result.to_json()
    assert data["cost_cap"] == 2.5
    assert data["summary"]["random search"]["400.0"]["cost_per_query"] <= 2.5
    # quality alone: the strongest models are allowed and found
    free = compare(lk.with_cap(None), sizes=(30, 40, 50), seeds=[0], budgets=[400],
                   methods={"always the strongest model": MODEL_METHODS[
                       "always the strongest model"]})
    assert free.costs["always the strongest model"][400] == [5.0]


def test_the_gate_refuses_a_candidate_over_the_cost_cap():
    gate = Gate(cost_cap=2.0)
    assert gate.within_cap([1.0, 3.0]) and not gate.within_cap([2.5, 2.0])
    assert Gate().within_cap([100.0])
    with pytest.raises(ValueError, match="cost_cap must be > 0"):
        Gate(cost_cap=0.0)
