"""Gold-free checks a component declares on its outputs, weighed by the pairs' evidence.

A check reads one (inputs, outputs) item and says how well the output passes something the
component's inputs make testable without the gold answer: generated code run on the example
test the task ships with, say. On code the learned heads rank pairs near chance while such a
check ranks them at 0.9 (benchmarks/RESULTS.md, issue 40), so the local reward adds each check,
scaled by a weight on the heads' log-odds scale that the preference pairs set: the smoothed
share of the decisive pairs the check separates that it orders the way the downstream reward
did. A check no better than chance on the pairs gets weight 0 and changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from coalign.pairs import PreferencePair

MAX_WEIGHT = 6.0  # log-odds; a check right on every pair still leaves room for the head


@runtime_checkable
class Check(Protocol):
    """A gold-free score of one output: a float in [0, 1], or ``None`` where it does not apply
    (the item holds no field the check reads, e.g. a choice-keyed item)."""

    name: str

    def __call__(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> float | None:
        ...


@dataclass
class Evidence:
    """How a check ordered the decisive pairs it separated: ``agreed`` of ``separated``."""

    agreed: float = 0.0
    separated: int = 0

    @property
    def weight(self) -> float:
        """Log-odds of agreement, Laplace-smoothed, floored at 0 (no evidence: 0)."""
        p = (self.agreed + 1.0) / (self.separated + 2.0)
        return min(MAX_WEIGHT, max(0.0, math.log(p / (1.0 - p))))

    def add(self, other: Evidence) -> Evidence:
        return Evidence(self.agreed + other.agreed, self.separated + other.separated)

    def to_json(self) -> dict[str, float]:
        return {"agreed": self.agreed, "separated": self.separated}


def evidence(check: Check, pairs: Sequence[PreferencePair]) -> Evidence:
    """``check``'s agreement with the labels of the decisive ``pairs`` it separates."""
    agreed, separated = 0.0, 0
    for pair in pairs:
        if pair.is_tie:
            continue
        good, bad = check(pair.inputs, pair.chosen), check(pair.inputs, pair.rejected)
        if good is None or bad is None or good == bad:
            continue
        separated += 1
        agreed += good > bad
    return Evidence(agreed, separated)


def check_scores(checks: Sequence[Check], weights: Sequence[float],
                 items: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> np.ndarray:
    """Σ weight × check per item; a check that does not apply to an item adds 0."""
    out = np.zeros(len(items), dtype=np.float64)
    for check, weight in zip(checks, weights, strict=True):
        if weight == 0.0:
            continue  # running a check costs (a sandbox start for code); skip when inert
        for i, (inputs, outputs) in enumerate(items):
            value = check(inputs, outputs)
            if value is not None:
                out[i] += weight * float(value)
    return out
