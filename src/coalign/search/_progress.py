"""Progress of the search: 2-D hypervolume against a worst-seen reference point.

Decisions (see docs/search.md, "Progress"):

* The reference point only moves outward. Each round it becomes the component-wise worst of the
  previous reference and a corner just below-and-right of every candidate seen this round, so a
  front's hypervolume never shrinks because the reference moved.
* Progress is measured under one reference: the previous elite set is re-measured against this
  round's reference before comparing. A larger reference therefore adds area to both fronts and
  cannot fake progress, and a shrinking hypervolume (pruning dropped area) is stagnation, never
  negative progress.
* A previous hypervolume of 0 (no scored front yet) counts as progress only if the new front has
  area; the relative improvement is then undefined and recorded as ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coalign.search._selection import Scored, compute_pareto_front

_MARGIN = 0.1  # relative gap between the worst point seen and the reference corner
_FLOOR = 0.1  # absolute gap used when the worst value is exactly zero


def compute_hypervolume(front: Sequence[Scored], ref: tuple[float, float]) -> float:
    """Area dominated by ``front`` and bounded by ``ref = (quality, cost)``.

    Only points strictly better than ``ref`` on both axes contribute (a point touching the
    reference adds nothing). Dominated points and duplicates are allowed and add nothing twice.
    Sweep: walk the points from best quality down, adding the strip each one adds below the
    cheapest cost seen so far.
    """
    q_ref, c_ref = ref
    pts = sorted(
        {(p.quality_score, p.cost) for p in front if p.quality_score > q_ref and p.cost < c_ref},
        key=lambda qc: (-qc[0], qc[1]),
    )
    area, best_cost = 0.0, c_ref
    for q, c in pts:
        if c < best_cost:
            area += (q - q_ref) * (best_cost - c)
            best_cost = c
    return area


def _below(value: float) -> float:
    return value - _MARGIN * abs(value) if value != 0 else -_FLOOR


def _above(value: float) -> float:
    return value + _MARGIN * abs(value) if value != 0 else _FLOOR


def reference_point(
    points: Sequence[Scored], previous: tuple[float, float] | None = None
) -> tuple[float, float]:
    """Worst-seen corner: 10 % beyond the worst quality and worst cost (0.1 when that is 0).

    For a positive worst quality this is ``worst * 0.9`` and for a positive worst cost
    ``worst * 1.1``; the margin is taken on the absolute value so that the corner stays strictly
    below/right of every point when the worst values are negative too.
    """
    if not points:
        return previous if previous is not None else (-_FLOOR, _FLOOR)
    q = _below(min(p.quality_score for p in points))
    c = _above(max(p.cost for p in points))
    if previous is not None:
        q, c = min(q, previous[0]), max(c, previous[1])
    return (q, c)


@dataclass(frozen=True)
class Progress:
    hypervolume: float
    hypervolume_prev_same_ref: float
    relative_improvement: float | None
    progress: bool


def measure_progress(
    new_front: Sequence[Scored],
    previous_front: Sequence[Scored],
    ref: tuple[float, float],
    epsilon: float,
) -> Progress:
    """Compare two fronts under the same reference; progress means improvement > ``epsilon``."""
    new_hv = compute_hypervolume(new_front, ref)
    old_hv = compute_hypervolume(previous_front, ref)
    if old_hv <= 0.0:
        return Progress(new_hv, old_hv, None, new_hv > 0.0)
    rel = (new_hv - old_hv) / old_hv
    return Progress(new_hv, old_hv, rel, rel > epsilon)


def front_quality_spread(front: Sequence[Scored]) -> float:
    nd = compute_pareto_front(front)
    if not nd:
        return 0.0
    qs = [p.quality_score for p in nd]
    return max(qs) - min(qs)
