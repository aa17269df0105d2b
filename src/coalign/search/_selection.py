"""Pareto selection on (quality up, cost down): dominance, the front, crowding and pruning.

Every function takes a sequence of objects with ``quality_score`` and ``cost`` attributes and
never mutates it. Objects may carry a ``prompt_version`` (``vN``); it only breaks ties.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, TypeVar

from coalign.errors import ConfigError
from coalign.search._state import version_number


class Scored(Protocol):
    quality_score: float
    cost: float


T = TypeVar("T", bound=Scored)


def dominates(a: Scored, b: Scored) -> bool:
    """True when ``a`` is at least as good as ``b`` on both axes and strictly better on one."""
    no_worse = a.quality_score >= b.quality_score and a.cost <= b.cost
    better = a.quality_score > b.quality_score or a.cost < b.cost
    return no_worse and better


def compute_pareto_front(items: Sequence[T]) -> list[T]:
    """The non-dominated members, in input order. Exact duplicates are all kept."""
    return [a for a in items if not any(dominates(b, a) for b in items if b is not a)]


def _axis_order(items: Sequence[Scored], axis: str) -> list[int]:
    # ascending on the axis; equal values keep input order (stable sort), as NSGA-II does
    return sorted(range(len(items)), key=lambda i: getattr(items[i], axis))


def crowding_distance(front: Sequence[Scored]) -> list[float]:
    """NSGA-II crowding distance, aligned with the input order.

    For each axis the two extreme members (first and last after a stable ascending sort) get
    ``inf``; an interior member adds the gap between its two neighbours divided by the axis range
    (nothing when the range is zero). With two or fewer members all are ``inf``.
    """
    n = len(front)
    dist = [0.0] * n
    if n <= 2:
        return [math.inf] * n
    for axis in ("quality_score", "cost"):
        order = _axis_order(front, axis)
        values = [getattr(front[i], axis) for i in order]
        span = values[-1] - values[0]
        dist[order[0]] = math.inf
        dist[order[-1]] = math.inf
        if span <= 0:
            continue
        for k in range(1, n - 1):
            dist[order[k]] += (values[k + 1] - values[k - 1]) / span
    return dist


def _endpoints(front: Sequence[Scored]) -> set[int]:
    """Indices of the highest-quality and the lowest-cost member (ties: the better other axis,
    then the older version, then input order)."""
    if not front:
        return set()
    idx = range(len(front))

    def age(i: int) -> tuple[int, int]:
        return (version_number(getattr(front[i], "prompt_version", "")), i)

    best_q = min(idx, key=lambda i: (-front[i].quality_score, front[i].cost, age(i)))
    best_c = min(idx, key=lambda i: (front[i].cost, -front[i].quality_score, age(i)))
    return {best_q, best_c}


def prune_to_size(front: Sequence[T], max_size: int) -> list[T]:
    """Shrink ``front`` to ``max_size`` by repeatedly removing the least crowded member.

    Crowding is recomputed after each removal. The highest-quality and lowest-cost members are
    never removed. Ties on crowding distance remove the newest version (highest N of ``vN``),
    then the later input position, so the result does not depend on luck.
    """
    if max_size < 2:
        raise ConfigError(f"prune_to_size: max_size must be at least 2 (got {max_size})")
    kept = list(front)
    while len(kept) > max_size:
        dist = crowding_distance(kept)
        protected = _endpoints(kept)
        removable = [i for i in range(len(kept)) if i not in protected]
        victim = min(
            removable,
            key=lambda i: (
                dist[i],
                -version_number(getattr(kept[i], "prompt_version", "")),
                -i,
            ),
        )
        del kept[victim]
    return kept


def update_elite_set(
    current: Sequence[T], scored: Sequence[T], max_size: int, cold_start: bool = False
) -> list[T]:
    """Combine the elite with newly scored candidates into the next elite set.

    Drops ``(0, 0)`` placeholders (a candidate scored exactly like the baseline carries no
    information yet), dedupes by ``prompt_version`` (the later record wins), then keeps the
    Pareto front pruned to ``max_size``. On the cold-start round nothing is filtered or pruned so
    that every seed gets a second data point.
    """
    merged: dict[str, T] = {}
    for c in [*current, *scored]:
        if c.quality_score == 0.0 and c.cost == 0.0:
            continue
        merged[getattr(c, "prompt_version", str(id(c)))] = c
    pool = list(merged.values())
    if cold_start:
        return pool
    return prune_to_size(compute_pareto_front(pool), max_size)
