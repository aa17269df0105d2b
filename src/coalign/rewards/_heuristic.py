"""Fixed, hand-written local rewards: the naive proxies an LRF is compared against.

Examples: "the shorter output wins", "the output sharing most words with the query wins", a
leaderboard score per model name. They need no training, so ``fit``/``adapt`` do nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from coalign.rewards._base import BaseRewardModel, Item
from coalign.rewards._text import split_inputs, tokens, values_text

ScoreFn = Callable[[Mapping[str, Any], Mapping[str, Any]], float]


class HeuristicReward(BaseRewardModel):
    """Scores every component's (inputs, outputs) with one plain function."""

    def __init__(self, fn: ScoreFn, name: str = "heuristic") -> None:
        self.fn = fn
        self.name = name

    def score_batch(self, component: str, items: Sequence[Item]) -> np.ndarray:
        return np.array([float(self.fn(x, y)) for x, y in items], dtype=np.float64)


def _shorter(inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> float:
    return -float(len(tokens(values_text(outputs))))


def _query_overlap(inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> float:
    query, _ = split_inputs(inputs)
    q = set(tokens(values_text(query)))
    out = tokens(values_text(outputs))
    return len(q.intersection(out)) / len(q) if q else 0.0


def shorter_output_reward() -> HeuristicReward:
    """Fewer output tokens scores higher (a brevity proxy)."""
    return HeuristicReward(_shorter, "shorter")


def query_overlap_reward() -> HeuristicReward:
    """Share of the query's words that the output repeats (a keyword-overlap proxy)."""
    return HeuristicReward(_query_overlap, "query_overlap")
