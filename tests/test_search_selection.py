"""Selection and hypervolume: property tests against pymoo plus hand-worked edge cases."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coalign.search import (
    compute_hypervolume,
    compute_pareto_front,
    crowding_distance,
    dominates,
    prune_to_size,
    reference_point,
    update_elite_set,
)

pymoo_hv = pytest.importorskip("pymoo.indicators.hv")
pymoo_cd = pytest.importorskip("pymoo.operators.survival.rank_and_crowding.metrics")


@dataclass(frozen=True)
class P:
    quality_score: float
    cost: float
    prompt_version: str = ""


coord = st.floats(min_value=-2.0, max_value=2.0, allow_nan=False, allow_infinity=False)
points = st.lists(st.tuples(coord, coord), min_size=1, max_size=25)


def pts(pairs):
    return [P(q, c, f"v{i + 1}") for i, (q, c) in enumerate(pairs)]


def pymoo_hypervolume(front, ref):
    # pymoo minimises every objective: negate quality
    f = np.array([[-p.quality_score, p.cost] for p in front], dtype=float)
    return float(pymoo_hv.HV(ref_point=np.array([-ref[0], ref[1]]))(f))


@settings(max_examples=200, deadline=None)
@given(points, st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_hypervolume_matches_pymoo(pairs, dq, dc):
    items = pts(pairs)
    # references from "touching the extremes" (margin 0) to well outside
    ref = (min(p.quality_score for p in items) - dq, max(p.cost for p in items) + dc)
    assert compute_hypervolume(items, ref) == pytest.approx(
        pymoo_hypervolume(items, ref), rel=1e-9, abs=1e-12
    )


@settings(max_examples=200, deadline=None)
@given(points)
def test_crowding_matches_pymoo_on_fronts(pairs):
    front = compute_pareto_front(pts(pairs))
    # pymoo leaves every member at 0 when all are identical; our endpoints stay infinite
    if len({(p.quality_score, p.cost) for p in front}) < 2:
        return
    ours = crowding_distance(front)
    f = np.array([[p.quality_score, p.cost] for p in front], dtype=float)
    theirs = pymoo_cd.calc_crowding_distance(f) if len(front) > 2 else np.full(len(front), np.inf)
    for a, b in zip(ours, theirs, strict=True):
        if math.isinf(b):
            assert math.isinf(a)
        else:  # pymoo averages the two axes, NSGA-II (and we) sum them
            assert a == pytest.approx(2 * b, rel=1e-9, abs=1e-12)


@given(points)
def test_front_is_nondominated_and_complete(pairs):
    items = pts(pairs)
    front = compute_pareto_front(items)
    assert front, "a non-empty set has a non-empty front"
    for a in front:
        assert not any(dominates(b, a) for b in items)
    for x in items:
        assert x in front or any(dominates(f, x) for f in front)


@given(points)
def test_hypervolume_of_set_equals_hypervolume_of_front(pairs):
    items = pts(pairs)
    ref = reference_point(items)
    assert compute_hypervolume(items, ref) == pytest.approx(
        compute_hypervolume(compute_pareto_front(items), ref)
    )


@settings(deadline=None)
@given(points, st.integers(2, 6))
def test_prune_keeps_endpoints_and_size(pairs, k):
    front = compute_pareto_front(pts(pairs))
    kept = prune_to_size(front, k)
    assert len(kept) == min(len(front), k)
    assert all(p in front for p in kept)
    best_q = max(p.quality_score for p in front)
    best_c = min(p.cost for p in front)
    assert any(p.quality_score == best_q for p in kept)
    assert any(p.cost == best_c for p in kept)


def test_dominates_needs_one_strict_improvement():
    assert dominates(P(0.2, 0.1), P(0.1, 0.1))
    assert dominates(P(0.1, 0.0), P(0.1, 0.1))
    assert not dominates(P(0.1, 0.1), P(0.1, 0.1))
    assert not dominates(P(0.2, 0.3), P(0.1, 0.1))


def test_hypervolume_edge_cases():
    ref = (0.0, 1.0)
    assert compute_hypervolume([], ref) == 0.0
    assert compute_hypervolume([P(0.5, 0.5)], ref) == pytest.approx(0.25)  # one point
    two = [P(0.5, 0.5), P(1.0, 0.8)]  # 0.5*0.5 + (1.0-0)*(0.5-... ) worked below
    # strips: q=1.0 covers cost 0.8..1.0 -> 1.0*0.2; q=0.5 covers cost 0.5..0.8 -> 0.5*0.3
    assert compute_hypervolume(two, ref) == pytest.approx(0.2 + 0.15)
    dup = [P(0.5, 0.5), P(0.5, 0.5), P(0.5, 0.5)]
    assert compute_hypervolume(dup, ref) == pytest.approx(0.25)
    # a point touching the reference on either axis adds nothing
    assert compute_hypervolume([P(0.0, 0.5)], ref) == 0.0
    assert compute_hypervolume([P(0.5, 1.0)], ref) == 0.0
    assert compute_hypervolume([P(-1.0, 2.0)], ref) == 0.0  # outside the box


def test_crowding_edge_cases():
    assert crowding_distance([]) == []
    assert crowding_distance([P(0.1, 0.1)]) == [math.inf]
    assert crowding_distance([P(0.1, 0.1), P(0.2, 0.3)]) == [math.inf, math.inf]
    # worked example, input order shuffled: interior gaps 0.5+0.5 and 0.5+0.5 over unit ranges
    front = [P(0.5, 0.5), P(0.0, 0.0), P(1.0, 1.0), P(0.25, 0.25)]
    d = crowding_distance(front)
    assert math.isinf(d[1]) and math.isinf(d[2])
    assert d[0] == pytest.approx((1.0 - 0.25) * 2)
    assert d[3] == pytest.approx((0.5 - 0.0) * 2)
    # zero range on both axes (all duplicates): endpoints inf, the rest 0
    same = crowding_distance([P(0.3, 0.3)] * 4)
    assert same.count(math.inf) == 2 and same.count(0.0) == 2


def test_prune_tie_break_removes_newest_and_is_order_free():
    # evenly spaced: the three interior points tie on crowding distance
    front = [P(i / 4, i / 4, f"v{v}") for i, v in zip(range(5), [5, 1, 4, 2, 3], strict=True)]
    kept = prune_to_size(front, 4)
    assert {p.prompt_version for p in kept} == {"v5", "v1", "v2", "v3"}  # v4 (newest tie) goes
    again = prune_to_size(list(reversed(front)), 4)
    assert {p.prompt_version for p in again} == {p.prompt_version for p in kept}


def test_update_elite_drops_placeholders_and_dedupes():
    cur = [P(0.0, 0.0, "v1"), P(0.1, 0.1, "v2")]
    new = [P(0.2, 0.05, "v2"), P(0.05, 0.2, "v3")]  # v2 re-scored; v3 dominated by it
    assert update_elite_set(cur, new, 7) == [P(0.2, 0.05, "v2")]
    cold = update_elite_set(cur, new, 7, cold_start=True)
    assert [p.prompt_version for p in cold] == ["v2", "v3"]  # kept unfiltered, no placeholder


def test_reference_point_is_below_every_point_and_monotone():
    a = [P(0.2, 0.3), P(0.5, 0.1)]
    assert reference_point(a) == pytest.approx((0.18, 0.33))
    neg = [P(-0.2, -0.3)]
    q, c = reference_point(neg)
    assert q < -0.2 and c > -0.3  # the corner stays outside for negative values too
    assert reference_point([P(0.0, 0.0)]) == (-0.1, 0.1)
    assert reference_point(a, previous=(-1.0, 0.2)) == pytest.approx((-1.0, 0.33))
