"""The global reward of every full path: each config of a table's space on each finished question.

Computed on replay, with no LLM call, so that optimizers compared on a table look a config's
score up instead of re-running the system. Not cached on disk: it depends on the system's code
as much as on the table, and recomputing takes minutes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from coalign.config import SystemConfig
from coalign.data import Example
from coalign.runtime import Runtime
from coalign.task import Task


@dataclass(frozen=True)
class Rewards:
    """``scores[i, q]``: the reward of ``configs[i]`` (space order; 0 = the start) on
    ``questions[q]``; ``costs[i, q]``: its model seconds there (``Trace.cost_s``: what the
    table's calls took when they were built, so it reflects which models ran)."""

    questions: tuple[str, ...]
    configs: tuple[SystemConfig, ...]
    scores: np.ndarray
    costs: np.ndarray | None = None

    def means(self, questions: Sequence[int] | None = None) -> np.ndarray:
        """Each config's mean reward over ``questions`` (indices; default all)."""
        return self._columns(questions).mean(axis=1)

    def best(self, questions: Sequence[int] | None = None) -> int:
        """The config with the highest mean over ``questions`` (the first of ties)."""
        return int(np.argmax(self.means(questions)))

    def oracle(self, questions: Sequence[int] | None = None) -> float:
        """The per-question oracle: the best path of each question, averaged."""
        return float(self._columns(questions).max(axis=0).mean())

    def _columns(self, questions: Sequence[int] | None) -> np.ndarray:
        return self.scores if questions is None else self.scores[:, list(questions)]


def compute_rewards(task: Task, configs: Sequence[SystemConfig], examples: Sequence[Example],
                    runtime: Runtime) -> Rewards:
    from coalign.runner import evaluate

    results = [evaluate(task, examples, c, runtime) for c in configs]
    shape = (len(configs), len(examples))
    scores = np.array([r.scores for r in results], dtype=float).reshape(shape)
    costs = np.array([[t.cost_s() for t in r.traces] for r in results],
                     dtype=float).reshape(shape)
    return Rewards(tuple(e.id for e in examples), tuple(configs), scores, costs)
