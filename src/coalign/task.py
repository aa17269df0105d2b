"""``Task``: a system plus the global reward R(x, f(x; v)) it is optimized for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coalign.data._base import Example
from coalign.system import System
from coalign.trace import Trace

Metric = Callable[[Any, Example], float]


@dataclass(frozen=True)
class Task:
    """``metric(prediction, example)`` scores the system's output field against the example."""

    system: System
    metric: Metric
    metric_name: str = "metric"

    def reward(self, trace: Trace, example: Example) -> float:
        return float(self.metric(trace.state.get(self.system.output), example))

    def score(self, trace: Trace, example: Example) -> Trace:
        """Set and return ``trace.reward``."""
        trace.reward = self.reward(trace, example)
        return trace
