"""Reward-model protocols, the base class with no-op hooks, and the null object.

Two roles: a ``PairRanker`` only says which of a pair's outputs is better (what the alignment
report needs; an LLM judge is one), and a ``RewardModel`` also gives each (x_k, y_k) a scalar (what
local optimization needs). Every ``RewardModel`` is a ``PairRanker``.
"""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from coalign.pairs import PreferencePair, canonical_json

Item = tuple[Mapping[str, Any], Mapping[str, Any]]  # (inputs x_k, outputs y_k)


@runtime_checkable
class PairRanker(Protocol):
    def compare(self, pair: PreferencePair) -> float:
        """Positive if ``output_a`` is better, negative if ``output_b`` is, 0 if undecided."""
        ...


@runtime_checkable
class RewardModel(Protocol):
    def score(
        self, component: str, inputs: Mapping[str, Any], outputs: Mapping[str, Any]
    ) -> float: ...

    def score_batch(self, component: str, items: Sequence[Item]) -> np.ndarray: ...

    def fit(self, pairs: Sequence[PreferencePair]) -> Any: ...

    def adapt(self, pairs: Sequence[PreferencePair]) -> Any: ...

    def compare(self, pair: PreferencePair) -> float: ...


class BaseRewardModel(abc.ABC):
    """Implement ``score_batch``; ``fit``/``adapt`` are no-op hooks for fixed rewards."""

    @abc.abstractmethod
    def score_batch(self, component: str, items: Sequence[Item]) -> np.ndarray:
        """Scalar reward of each (inputs, outputs) item of ``component``."""

    def score(self, component: str, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> float:
        return float(self.score_batch(component, [(inputs, outputs)])[0])

    def can_score(self, component: str) -> bool:
        """Whether ``component`` has a reward yet (a learned one needs decisive pairs first)."""
        return True

    def fit(self, pairs: Sequence[PreferencePair]) -> Any:
        return None

    def adapt(self, pairs: Sequence[PreferencePair]) -> Any:
        return None

    def compare_batch(self, pairs: Sequence[PreferencePair]) -> list[float]:
        """``compare`` for many pairs, scoring each component's items in one batch."""
        out = [0.0] * len(pairs)
        by_comp: dict[str, list[int]] = {}
        for i, pair in enumerate(pairs):
            by_comp.setdefault(pair.component, []).append(i)
        for component, idx in by_comp.items():
            items: list[Item] = []
            for i in idx:
                items += [
                    (pairs[i].inputs, pairs[i].output_a),
                    (pairs[i].inputs, pairs[i].output_b),
                ]
            scores = self.score_batch(component, items)
            for j, i in enumerate(idx):
                out[i] = float(scores[2 * j] - scores[2 * j + 1])
        return out

    def compare(self, pair: PreferencePair) -> float:
        a, b = self.score_batch(
            pair.component, [(pair.inputs, pair.output_a), (pair.inputs, pair.output_b)]
        )
        return float(a - b)


class RandomReward(BaseRewardModel):
    """Null object: a uniform score in [0, 1) fixed by (seed, component, inputs, outputs)."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def score_batch(self, component: str, items: Sequence[Item]) -> np.ndarray:
        out = np.empty(len(items), dtype=np.float64)
        for i, (inputs, outputs) in enumerate(items):
            key = canonical_json([self.seed, component, dict(inputs), dict(outputs)])
            out[i] = int(hashlib.sha256(key.encode()).hexdigest()[:13], 16) / 16**13
        return out
