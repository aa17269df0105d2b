"""Optimizers compared on one replay table over many seeds, at matched budgets.

A seed draws the train / val / test split and seeds every method. A method maps
``(lookup, split, budget, seed)`` to a ``Trajectory``; the config it returns at budget B is
scored on the seed's test questions by lookup. Ceilings (never competitors): the best global
config on test and the per-question oracle on test.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coalign.compare._lookup import Lookup, Method, draw_split
from coalign.compare._methods import random_search, reinforce, tpe
from coalign.report import SeriesPoint, line_chart
from coalign.stats import paired_bootstrap

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


def best_baseline(scores: Mapping[str, Mapping[Any, Sequence[float]]], budget: Any) -> str | None:
    """The method with the best mean test score at ``budget`` (a key of each method's scores)
    that is a baseline: not one of coalign's arms (``coalign…``), not a reference or ceiling;
    the first listed on a tie; None when there is none."""
    baselines = [m for m in scores if not m.startswith("coalign") and m not in REFERENCES]
    return max(baselines, key=lambda m: float(np.mean(scores[m][budget])), default=None)


@dataclass
class Comparison:
    """Test score and test cost per query per method, budget and seed
    (``scores[method][budget][seed]``, ``costs`` alike), under the objective's cost ``cap``
    (None: quality alone)."""

    budgets: list[float]
    seeds: list[int]
    sizes: tuple[int, int, int]
    scores: dict[str, dict[float, list[float]]] = field(default_factory=dict)
    start: list[float] = field(default_factory=list)
    exhaustive_cost: float = 0.0
    costs: dict[str, dict[float, list[float]]] = field(default_factory=dict)
    cap: float | None = None
    # the config each method returned (``picks[method][budget][seed]``, a lookup index)
    picks: dict[str, dict[float, list[int]]] = field(default_factory=dict)
    # what each method's run at the largest budget reported (``Trajectory.stats``: refused
    # calls, validations, …), averaged over the seeds
    stats: dict[str, dict[str, float]] = field(default_factory=dict)
    # the returned system's score on each of the seed's test questions
    # (``per_question[method][budget][seed]``): a system outside the lookup's configs (a trained
    # decider, a per-input policy) is known only to the process that ran its seed
    per_question: dict[str, dict[float, list[list[float]]]] = field(default_factory=dict)

    def mean_cost(self, method: str, budget: float) -> float:
        values = self.costs.get(method, {}).get(budget) or [0.0]
        return float(np.mean(values))

    def summary(self, method: str, budget: float) -> dict[str, float]:
        values = self.scores[method][budget]
        mean, lo, hi, _ = paired_bootstrap(values, [0.0] * len(values))
        return {"mean": mean, "lo": lo, "hi": hi}

    def best_baseline(self, budget: float) -> str | None:
        """The baseline with the best mean test score at ``budget`` (``best_baseline``)."""
        return best_baseline(self.scores, budget)

    def paired(self, a: str, b: str, budget: float) -> dict[str, float]:
        """Mean test difference a - b over seeds, its bootstrap interval and P(a > b)."""
        mean, lo, hi, p = paired_bootstrap(self.scores[a][budget], self.scores[b][budget])
        return {"mean": mean, "lo": lo, "hi": hi, "p_better": p}

    def paired_by_question(self, lookup: Lookup, a: str, b: str, budget: float
                           ) -> dict[str, float] | None:
        """Mean test difference a - b over every seed's test questions pooled, with its
        bootstrap interval: with few seeds (the demo's two) this says how the two returned
        systems differ on these questions, where an interval over seeds says nothing. None
        when a pick's per-question scores are unknown (a system outside the lookup's configs
        in a comparison assembled by hand)."""
        diffs: list[float] = []
        for i, (seed, pa, pb) in enumerate(zip(self.seeds, self.picks[a][budget],
                                               self.picks[b][budget], strict=True)):
            known = [self.per_question.get(m, {}).get(budget, []) for m in (a, b)]
            if all(len(k) > i for k in known):
                diffs += (np.array(known[0][i]) - np.array(known[1][i])).tolist()
                continue
            if not (0 <= pa < lookup.n_configs and 0 <= pb < lookup.n_configs):
                return None
            test = list(draw_split(lookup.scores.shape[1], self.sizes, seed).test)
            diffs += (lookup.scores[pa, test] - lookup.scores[pb, test]).tolist()
        mean, lo, hi, p = paired_bootstrap(diffs, [0.0] * len(diffs))
        return {"mean": mean, "lo": lo, "hi": hi, "p_better": p, "questions": len(diffs)}

    def to_json(self) -> dict[str, Any]:
        return {"budgets": self.budgets, "seeds": self.seeds, "split": list(self.sizes),
                "start_test": self.start, "exhaustive_cost": self.exhaustive_cost,
                "cost_cap": self.cap,
                "scores": {m: {str(b): v for b, v in by.items()}
                           for m, by in self.scores.items()},
                "test_cost_per_query": {m: {str(b): v for b, v in by.items()}
                                        for m, by in self.costs.items()},
                "picks": {m: {str(b): v for b, v in by.items()} for m, by in self.picks.items()},
                "method_stats": self.stats,
                "summary": {m: {str(b): {**self.summary(m, b),
                                         "cost_per_query": self.mean_cost(m, b)} for b in by}
                            for m, by in self.scores.items()}}


def compare(lookup: Lookup, *, sizes: Sequence[int], seeds: Sequence[int],
            budgets: Sequence[float], methods: Mapping[str, tuple[Method, bool]] = METHODS,
            workers: int = 1) -> Comparison:
    """Every method and reference on every seed, under ``lookup.cap``. ``workers`` > 1 runs
    seeds in that many processes (each method must then pickle: module-level functions,
    ``LoopMethod``); a seed's figures do not depend on where it ran (torch's float sums do
    depend on the thread count, so the MiniLM encoder and the small models coalign trains run
    on one thread: ``coalign.rewards.single_thread``)."""
    out = Comparison([float(b) for b in budgets], list(seeds),
                     (int(sizes[0]), int(sizes[1]), int(sizes[2])),
                     exhaustive_cost=float(lookup.n_configs * sizes[1]), cap=lookup.cap)
    for name in [*methods, *REFERENCES]:
        for table in (out.scores, out.costs, out.picks, out.per_question):
            table[name] = {b: [] for b in out.budgets}
    jobs = [(lookup, out.sizes, seed, out.budgets, dict(methods)) for seed in seeds]
    if workers > 1 and len(seeds) > 1:
        context = multiprocessing.get_context("spawn")  # no fork after torch has threads
        with ProcessPoolExecutor(min(workers, len(seeds)), mp_context=context,
                                 initializer=_one_thread) as pool:
            per_seed = list(pool.map(_seed_scores, *zip(*jobs, strict=True)))
    else:
        per_seed = [_seed_scores(*job) for job in jobs]
    for start, scores, costs, picked, _, vectors in per_seed:
        out.start.append(start)
        for name, by_budget in scores.items():
            for b, value in by_budget.items():
                out.scores[name][b].append(value)
                out.costs[name][b].append(costs[name][b])
                out.picks[name][b].append(picked.get(name, {}).get(b, -1))
                if name in vectors:
                    out.per_question[name][b].append(vectors[name][b])
    for name in methods:
        keys = sorted({k for *_, stats, _ in per_seed for k in stats.get(name, {})})
        if keys:
            out.stats[name] = {k: float(np.mean([s.get(name, {}).get(k, 0.0)
                                                 for *_, s, _ in per_seed])) for k in keys}
    return out


def _seed_scores(lookup: Lookup, sizes: Sequence[int], seed: int, budgets: Sequence[float],
                 methods: Mapping[str, tuple[Method, bool]],
                 ) -> tuple[float, dict[str, dict[float, float]], dict[str, dict[float, float]],
                            dict[str, dict[float, int]], dict[str, dict[str, float]],
                            dict[str, dict[float, list[float]]]]:
    """One seed: the start config's test score, and each method's and reference's test score,
    test cost per query, returned config and its score per test question, per budget. A method
    returns the best config on validation within the cap among those it evaluated (the start
    when none is)."""
    split = draw_split(lookup.scores.shape[1], sizes, seed)
    start = lookup.score(0, split.test)

    def feasible(config: int) -> bool:
        return lookup.feasible(config, split.val)

    picked: dict[str, dict[float, int]] = {}
    stats: dict[str, dict[str, float]] = {}
    for name, (method, anytime) in methods.items():
        if anytime:
            runs = dict.fromkeys(budgets, method(lookup, split, max(budgets), seed))
        else:
            runs = {b: method(lookup, split, b, seed) for b in budgets}
        picks = {b: run.at(b, feasible) for b, run in runs.items()}
        picked[name] = {b: p or 0 for b, p in picks.items()}  # nothing affordable: the start
        stats[name] = dict(runs[max(budgets)].stats)
    allowed = np.array([feasible(c) for c in range(lookup.n_configs)])
    val_means = np.where(allowed, lookup.scores[:, list(split.val)].mean(axis=1), -np.inf)
    test_means = lookup.scores[:, list(split.test)].mean(axis=1)
    within = lookup.cap is None or lookup.costs[:, list(split.test)].mean(axis=1) <= lookup.cap
    best_test = int(np.argmax(np.where(within, test_means, -np.inf)))
    for name, config in ((START, 0), (EXHAUSTIVE, int(np.argmax(val_means))),
                         (CEILINGS[0], best_test)):
        picked[name] = {b: config for b in budgets}
    scores = {name: {b: lookup.score(c, split.test) for b, c in by.items()}
              for name, by in picked.items()}
    costs = {name: {b: lookup.cost(c, split.test) for b, c in by.items()}
             for name, by in picked.items()}
    # per question, the best path whatever it costs: a ceiling on quality, not a method
    oracle = float(lookup.scores[:, list(split.test)].max(axis=0).mean())
    scores[CEILINGS[1]] = {b: oracle for b in budgets}
    costs[CEILINGS[1]] = {b: float("nan") for b in budgets}
    vectors = {name: {b: [lookup.score(c, [q]) for q in split.test] for b, c in by.items()}
               for name, by in picked.items()}
    return start, scores, costs, picked, stats, vectors


def _one_thread() -> None:
    """Worker processes share the cores: one BLAS / torch thread each."""
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


def anytime_svg(result: Comparison, *, metric: str, title: str) -> str:
    """Mean test metric against budget, one line per method with its 95% band."""
    series = {}
    for name in result.scores:
        series[name] = [SeriesPoint(b, s["mean"], s["lo"], s["hi"])
                        for b in result.budgets for s in [result.summary(name, b)]]
    return line_chart(series, x_label="budget (equivalent full-system runs)",
                      y_label=f"test {metric}", title=title, log_x=True,
                      dashed=REFERENCES)


def front_svg(result: Comparison, true_front: Sequence[tuple[float, float]], *, metric: str,
              title: str) -> str:
    """Quality against cost per query: the space's true front (``(cost, quality)`` of the
    non-dominated configs, dashed) and each method's mean test (cost, quality) at each budget,
    joined in budget order."""
    series = {"true front (every config)": [SeriesPoint(c, q) for c, q in true_front]}
    for name in result.scores:
        if name == CEILINGS[1]:
            continue  # the per-question oracle has no single config, so no cost
        series[name] = [SeriesPoint(result.mean_cost(name, b), result.summary(name, b)["mean"],
                                    tip=f"{name} at {b:g} runs")
                        for b in result.budgets]
    return line_chart(series, x_label="test cost per query (model seconds)",
                      y_label=f"test {metric}", title=title,
                      dashed=("true front (every config)", *REFERENCES))
