"""Optimizers compared on one replay table over many seeds, at matched budgets.

A seed draws the train / val / test split and seeds every method. A method maps
``(lookup, split, budget, seed)`` to a ``Trajectory``; the config it returns at budget B is
scored on the seed's test questions by lookup. Ceilings (never competitors): the best global
config on test and the per-question oracle on test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coalign.optimize._gate import paired_bootstrap
from coalign.report._lines import SeriesPoint, line_chart
from coalign.tables._compare import (
    Lookup,
    Method,
    draw_split,
    random_search,
    reinforce,
    tpe,
)

# name -> (method, whether one run at the largest budget gives every smaller one: a method
# whose result at budget B depends on B, like REINFORCE's final validation, runs per budget)
METHODS: dict[str, tuple[Method, bool]] = {
    "random search": (random_search, True),
    "optuna tpe": (tpe, True),
    "reinforce (global reward)": (reinforce, False),
}
CEILINGS = ("best global config on test", "per-question oracle on test")
START = "start config (unoptimized)"
EXHAUSTIVE = "best on validation (exhaustive)"
REFERENCES = (START, EXHAUSTIVE, *CEILINGS)  # drawn dashed: not methods at a budget


@dataclass
class Comparison:
    """Test score per method, budget and seed (``scores[method][budget][seed]``)."""

    budgets: list[float]
    seeds: list[int]
    sizes: tuple[int, int, int]
    scores: dict[str, dict[float, list[float]]] = field(default_factory=dict)
    start: list[float] = field(default_factory=list)
    exhaustive_cost: float = 0.0

    def summary(self, method: str, budget: float) -> dict[str, float]:
        values = self.scores[method][budget]
        mean, lo, hi, _ = paired_bootstrap(values, [0.0] * len(values))
        return {"mean": mean, "lo": lo, "hi": hi}

    def paired(self, a: str, b: str, budget: float) -> dict[str, float]:
        """Mean test difference a - b over seeds, its bootstrap interval and P(a > b)."""
        mean, lo, hi, p = paired_bootstrap(self.scores[a][budget], self.scores[b][budget])
        return {"mean": mean, "lo": lo, "hi": hi, "p_better": p}

    def to_json(self) -> dict[str, Any]:
        return {"budgets": self.budgets, "seeds": self.seeds, "split": list(self.sizes),
                "start_test": self.start, "exhaustive_cost": self.exhaustive_cost,
                "scores": {m: {str(b): v for b, v in by.items()}
                           for m, by in self.scores.items()},
                "summary": {m: {str(b): self.summary(m, b) for b in by}
                            for m, by in self.scores.items()}}


def compare(lookup: Lookup, *, sizes: Sequence[int], seeds: Sequence[int],
            budgets: Sequence[float], methods: Mapping[str, tuple[Method, bool]] = METHODS,
            ) -> Comparison:
    out = Comparison([float(b) for b in budgets], list(seeds),
                     (int(sizes[0]), int(sizes[1]), int(sizes[2])),
                     exhaustive_cost=float(lookup.n_configs * sizes[1]))
    for name in [*methods, *REFERENCES]:
        out.scores[name] = {b: [] for b in out.budgets}
    for seed in seeds:
        split = draw_split(lookup.scores.shape[1], sizes, seed)
        out.start.append(lookup.score(0, split.test))
        for name, (method, anytime) in methods.items():
            if anytime:
                full = method(lookup, split, max(out.budgets), seed)
                picks = {b: full.at(b) for b in out.budgets}
            else:
                picks = {b: method(lookup, split, b, seed).at(b) for b in out.budgets}
            for b, picked in picks.items():  # nothing affordable: the start config stays
                out.scores[name][b].append(lookup.score(picked or 0, split.test))
        val_means = lookup.scores[:, list(split.val)].mean(axis=1)
        test_means = lookup.scores[:, list(split.test)].mean(axis=1)
        ceiling = {START: out.start[-1], EXHAUSTIVE: float(test_means[int(np.argmax(val_means))]),
                   CEILINGS[0]: float(test_means.max()),
                   CEILINGS[1]: float(lookup.scores[:, list(split.test)].max(axis=0).mean())}
        for name, value in ceiling.items():
            for b in out.budgets:
                out.scores[name][b].append(value)
    return out


def anytime_svg(result: Comparison, *, metric: str, title: str) -> str:
    """Mean test metric against budget, one line per method with its 95% band."""
    series = {}
    for name in result.scores:
        series[name] = [SeriesPoint(b, s["mean"], s["lo"], s["hi"])
                        for b in result.budgets for s in [result.summary(name, b)]]
    return line_chart(series, x_label="budget (equivalent full-system runs)",
                      y_label=f"test {metric}", title=title, log_x=True,
                      dashed=REFERENCES)
