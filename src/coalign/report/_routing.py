"""Where per-instance choices sent the inputs: per option, its share of the inputs, their mean
metric and what the component cost on them.

Read from the traces of one configuration: each step records the value every per-instance
param took for that input (``Step.choices``), as a selector picked it or as configured.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from coalign.trace import Trace


@dataclass(frozen=True)
class RouteRow:
    slot: str  # "component.param"
    option: str
    inputs: int
    share: float  # of the inputs that reached the slot
    quality: float  # mean reward of those inputs
    tokens: float | None  # mean LLM tokens per input that made fresh calls (cache hits cost 0)
    seconds: float | None  # mean seconds of the component on those inputs


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def routing_rows(traces: Sequence[Trace],
                 label: Callable[[Any], str] = str) -> tuple[RouteRow, ...]:
    """One row per (slot, option), options by falling share; ``label`` names an option."""
    seen: dict[str, dict[str, list[tuple[float, int, int, float]]]] = {}
    for trace in traces:
        for step in trace.steps:
            if step.skipped:
                continue
            for param, option in step.choices.items():
                slot = seen.setdefault(f"{step.component}.{param}", {})
                slot.setdefault(label(option), []).append(
                    (trace.reward or 0.0, step.usage.tokens, step.usage.calls, step.latency_s))
    out = []
    for slot, options in seen.items():
        total = sum(len(v) for v in options.values())
        for option, runs in sorted(options.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            fresh = [tokens for _, tokens, calls, _ in runs if calls]
            out.append(RouteRow(slot, option, len(runs), len(runs) / total,
                                sum(r for r, *_ in runs) / len(runs), _mean(fresh),
                                _mean([s for *_, s in runs])))
    return tuple(out)
