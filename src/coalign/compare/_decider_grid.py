"""The decider grid: per config and question of a replay table, the decider's candidate
features and the metric of picking each candidate, read once from the replayed traces (no LLM
call), so a baseline's weights trial is a matrix product (``WeightsSearch``,
``WeightsReinforce``)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from coalign.errors import ConfigError


@dataclass(frozen=True)
class DeciderGrid:
    """Per config (the table's order) and pool question: the decider's candidate features and
    the metric of picking each candidate."""

    features: tuple[tuple[np.ndarray, ...], ...]  # [config][question] -> (candidates, 6)
    right: tuple[tuple[np.ndarray, ...], ...]  # [config][question] -> (candidates,)
    start: np.ndarray  # the untrained scorer's weights
    share: float = 1.0  # a decider execution's share of a run (1 / the components)

    def scores(self, config: int, weights: np.ndarray, questions: list[int]) -> np.ndarray:
        """The metric per question of ``config`` with the scorer ``weights`` (ties: the
        earlier candidate, as the decider breaks them)."""
        return np.array([self.right[config][q][int(np.argmax(self.features[config][q]
                                                              @ weights))]
                         for q in questions])

    def system(self, lookup: Any, config: int, weights: np.ndarray, test: Sequence[int]) -> int:
        """``config`` with the scorer ``weights`` as a system of its own in ``lookup``, known on
        the ``test`` questions (``Lookup.add``); returns its index."""
        scores = self.scores(config, weights, list(test))
        return lookup.add(dict(zip(test, scores.tolist(), strict=True)),
                          {q: lookup.cost(config, [q]) for q in test})


def deciders_of(task: Any) -> list[Any]:
    """Components with a weights param that score candidates from features."""
    return [c for c in task.system.components
            if any(p.kind == "weights" for p in c.params.values()) and hasattr(c, "features")]


@functools.lru_cache(maxsize=4)
def decider_grid(table: str) -> DeciderGrid:
    """The grid of the replay table in directory ``table`` (computed once per process)."""
    import torch

    from coalign.tables import Table

    loaded = Table(table)
    space = loaded.space
    task = space.task()
    deciders = deciders_of(task)
    if len(deciders) != 1:
        raise ConfigError(f"table {table}: weights search needs one decider with a weights "
                          f"param and candidate features; found {len(deciders)}")
    decider = deciders[0]
    runtime = loaded.runtime()
    examples = loaded.finished()
    features, right = [], []
    for config in space.configs(task):
        f_row, r_row = [], []
        for e in examples:
            trace = task.system.run(e.id, e.inputs, config, runtime)
            with torch.no_grad():
                f = decider.features(trace.step(decider.name).inputs).numpy().astype(float)
            f_row.append(f)
            r_row.append(np.array([task.metric(str(i), e) for i in range(len(f))]))
        features.append(tuple(f_row))
        right.append(tuple(r_row))
    return DeciderGrid(tuple(features), tuple(right), _linear(decider),
                       1.0 / len(task.system.components))


def _linear(decider: Any) -> np.ndarray:
    """The untrained scorer as one weight vector over the features (``linear_weights``);
    refused for a scorer with a hidden layer."""
    from coalign.component import linear_weights

    state = decider.params[decider.policy_param].default
    w = linear_weights(state)
    if w is None:
        raise ConfigError(f"weights search: decider {decider.name!r} is not linear in its "
                          f"features (params {sorted(state)})")
    return w.numpy().astype(float)


