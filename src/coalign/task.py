"""``Task``: a system plus the global reward R(x, f(x; v)) it is optimized for."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from coalign.data import Example
from coalign.errors import ConfigError
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

    def check_inputs(self, examples: Sequence[Example], data: str) -> None:
        """Refuse ``examples`` (of the dataset named ``data``) that lack an input the system
        declares: one line naming the field, before a run fails on it halfway."""
        for e in examples:
            missing = [f for f in self.system.inputs if f not in e.inputs]
            if missing:
                raise ConfigError(
                    f"dataset {data}: system {self.system.name!r} needs input {missing[0]!r}, "
                    f"missing from example {e.id!r} (it has {sorted(e.inputs)}); use data that "
                    f"has it or map a row field to it (data: {{path, fields: {{{missing[0]}: "
                    "...}})")
