"""Quality against cost of the configurations validated during a run: per config, its mean
validation metric and mean model seconds per query (``Trace.cost_s``: the model chosen is in
it), and which configs are on the non-dominated front (``coalign.search``'s Pareto rule:
higher quality, lower cost).

Read from the stored validation traces: the loop stores those of the unoptimized system
(first) and of each accepted config, not those of a candidate the gate refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from coalign.report._scores import mean_reward
from coalign.search import compute_pareto_front
from coalign.trace import Trace

START = "start (unoptimized)"


@dataclass(frozen=True)
class FrontPoint:
    label: str
    quality_score: float  # mean validation metric (the name ``compute_pareto_front`` reads)
    cost: float  # mean model seconds per validation query; 0: no cost recorded
    inputs: int
    start: bool = False
    final: bool = False
    on_front: bool = False


def front_points(groups: Mapping[str, Sequence[Trace]],
                 labels: Mapping[str, str]) -> tuple[FrontPoint, ...]:
    """One point per validated config (``groups``: its traces by trace key, the unoptimized
    system first and the final system last, as the loop stores them)."""
    last = len(groups) - 1
    points = [FrontPoint(START if i == 0 else labels.get(key, f"configuration {key[:12]}"),
                         mean_reward(traces), sum(t.cost_s() for t in traces) / len(traces),
                         len(traces), start=i == 0, final=i == last)
              for i, (key, traces) in enumerate(groups.items()) if traces]
    front = {id(p) for p in compute_pareto_front(points)}
    return tuple(replace(p, on_front=id(p) in front) for p in points)


def cost_recorded(points: Sequence[FrontPoint]) -> bool:
    """Some config cost model seconds: traces from before costs were recorded have none."""
    return any(p.cost > 0 for p in points)
