"""A per-input cascade: configs run in turn on an input until the system's output passes the
gold-free checks its output component declares (code: the task's example test).

A router that reads the *question* cannot tell which Choice value wins it (the
``router_probe`` benchmark: which model a question needs is not in its text). A cascade reads
the *output*: the optimized config answers; where its output fails the checks, the next config
of the chain runs, and the first output that passes replaces it (none passes: the first
answer stands). The checks' precision makes a replacement a gain in expectation (on the MBPP
tables, code that passes the example test scores well above code that fails it:
benchmarks/RESULTS.md, "Per-input cascades"), so the chain's depth is a cost knob: each link
adds its model seconds on the inputs that reach it.

``fit_cascade`` fits the chain from what a run already paid for: the validation traces of
every config the loop validated in full (the loop keeps those of rejected candidates under
``CANDIDATE_TAG``). ``evaluate_cascade`` runs a cascade over a dataset, stored and resumable
as ``evaluate`` is: each link is an ``evaluate`` of its config on the inputs still failing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from coalign.config import SystemConfig
from coalign.data import Example
from coalign.errors import ConfigError
from coalign.pairs import canonical_json
from coalign.runner import EvalResult, evaluate
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.system import System
from coalign.task import Task
from coalign.trace import Trace, Usage

CANDIDATE_TAG = "val_candidate"  # validation traces of fully validated, rejected candidates


def output_checks(task: Task) -> tuple[Any, ...]:
    """The checks declared by the component that writes the system's output."""
    system = task.system
    return next(tuple(c.checks) for c in system.components if system.output in c.outputs)


def check_output(task: Task, trace: Trace) -> float | None:
    """The mean of the output checks on ``trace``'s output; None where none applies."""
    output = {task.system.output: trace.state.get(task.system.output)}
    got = [v for v in (c({**trace.inputs, **trace.state}, output) for c in output_checks(task))
           if v is not None]
    return float(np.mean(got)) if got else None


def passes(task: Task, trace: Trace) -> bool:
    """Whether ``trace``'s output passes every check (no check applies: it stands)."""
    score = check_output(task, trace)
    return score is None or score >= 1.0


def fit_chain(scores: np.ndarray, passed: np.ndarray, depth: int) -> list[int]:
    """Row indices of a cascade over ``scores[config, input]`` (row 0, the answering config,
    first; at most ``depth`` fallbacks). Each next link is the unused row with the best mean
    score on the inputs every earlier link failed (``passed`` False); ties go to the row that
    passes there more often, then to the best mean overall. No stopping rule on the means: a
    link's output is taken only where it passes and every earlier one failed."""
    chain, left = [0], list(range(scores.shape[1]))
    overall = scores.mean(axis=1)
    while len(chain) <= depth and len(chain) < len(scores):
        left = [q for q in left if not passed[chain[-1], q]]
        unused = [r for r in range(len(scores)) if r not in chain]
        key = [(scores[r, left].mean() if left else 0.0,
                passed[r, left].mean() if left else 0.0, overall[r]) for r in unused]
        chain.append(unused[max(range(len(unused)), key=key.__getitem__)])
    return chain


def answers(chain: Sequence[int], passed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per input (a column of ``passed[config, input]``): the row whose output answers and how
    many links ran (the first that passes stops the chain; none passes: row ``chain[0]``)."""
    n = passed.shape[1]
    answer, ran = np.full(n, chain[0]), np.full(n, len(chain))
    for q in range(n):
        for depth, row in enumerate(chain):
            if passed[row, q]:
                answer[q], ran[q] = row, depth + 1
                break
    return answer, ran


@dataclass(frozen=True)
class Cascade:
    """``configs[0]`` answers; each next one runs where every earlier output failed."""

    configs: tuple[SystemConfig, ...]

    def to_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.configs]

    @classmethod
    def from_json(cls, system: Any, raw: Any) -> Cascade:
        if not isinstance(raw, list) or not raw:
            raise ConfigError("'cascade' must be a non-empty list of configs")
        return cls(tuple(SystemConfig.from_json(system, c) for c in raw))


@dataclass(frozen=True)
class CascadeFit:
    """A fitted cascade and how it does on the validation inputs it was fitted on (in-sample:
    an optimistic figure; the test split says what holds)."""

    cascade: Cascade
    candidates: int  # fully validated configs it was chosen from
    val_single: float  # the answering config alone
    val_cascade: float
    escalated: float  # share of validation inputs whose first output failed the checks
    cost_ratio: float  # model seconds per input, cascade / answering config alone
    rerun_cost_ratio: float  # the same, each fallback rerunning only what it changes

    def to_json(self) -> dict[str, Any]:
        return {"configs": self.cascade.to_json(), "candidates": self.candidates,
                "val_single": self.val_single, "val_cascade": self.val_cascade,
                "escalated": self.escalated, "cost_ratio": self.cost_ratio,
                "rerun_cost_ratio": self.rerun_cost_ratio}


def fit_cascade(task: Task, store: RunStore, config: SystemConfig,
                configs: Sequence[SystemConfig], depth: int = 1,
                vary: Sequence[str] | None = None) -> CascadeFit:
    """The cascade answering with ``config`` whose fallbacks come from ``configs`` (the run's
    validated configs), chosen on the validation traces stored for them: ``config``'s under
    ``"val"``, a candidate's under ``"val"`` (once current) or ``CANDIDATE_TAG``. A candidate
    without a trace on every validation input of ``config`` is left out, and with ``vary``
    (``component.param`` names) so is one that differs from ``config`` in any other param.

    Raises:
        ConfigError: ``depth`` < 1, the output component declares no check, or ``config``
            has no validation traces in ``store``.
    """
    if depth < 1:
        raise ConfigError(f"cascade depth must be >= 1, got {depth}")
    if not output_checks(task):
        raise ConfigError(f"system {task.system.name!r}: its output component declares no "
                          "check, so a cascade cannot tell a failed output")
    rows, found = validated_rows(store, config, configs, vary)
    if not found[0]:
        raise ConfigError("the final config has no stored validation traces: run or resume "
                          "the optimization first")
    scores = np.array([[t.reward or 0.0 for t in ts] for ts in found])
    seen: dict[tuple[str, str], bool] = {}  # configs share outputs: run each check once

    def passed_once(t: Trace) -> bool:
        key = (t.example_id, canonical_json(t.state.get(task.system.output)))
        if key not in seen:
            seen[key] = passes(task, t)
        return seen[key]

    passed = np.array([[passed_once(t) for t in ts] for ts in found])
    costs = np.array([[t.cost_s() for t in ts] for ts in found])
    fresh = [rerun_components(task.system, config, c) for c in rows]  # once a row
    reruns = np.array([[_cost_of(t, f) for t in ts] for f, ts in zip(fresh, found, strict=True)])
    chain = fit_chain(scores, passed, depth)
    answer, ran = answers(chain, passed)
    cols = np.arange(len(found[0]))

    def ratio(per: np.ndarray) -> float:
        spent = [per[chain[:r], q].sum() for q, r in zip(cols, ran, strict=True)]
        return float(np.mean(spent) / max(costs[0].mean(), 1e-9))

    return CascadeFit(Cascade(tuple(rows[i] for i in chain)), len(rows),
                      float(scores[0].mean()), float(scores[answer, cols].mean()),
                      float(np.mean(ran > 1)), ratio(costs), ratio(reruns))


def _cost_of(trace: Trace, components: set[str]) -> float:
    """Model seconds of ``trace``'s steps of ``components`` (reused steps at their cost)."""
    return sum(st.usage.model_s for st in trace.steps if st.component in components)


def validated_configs(task: Task, store: RunStore) -> list[SystemConfig]:
    """The start config and every config a run's ledger row names (a fully validated
    candidate, the config after a step), in ledger order: a cascade's fallbacks come from
    them."""
    configs = [task.system.default_config()]
    for _, _, row in store.steps():
        for key in ("candidate", "config"):
            if isinstance(row.get(key), dict):
                configs.append(SystemConfig.from_json(task.system, row[key]))
    return configs


def validated_rows(store: RunStore, config: SystemConfig, configs: Sequence[SystemConfig],
                   vary: Sequence[str] | None = None
                   ) -> tuple[list[SystemConfig], list[list[Trace]]]:
    """``config`` and the distinct ``configs`` with a stored validation trace on every input
    ``config`` has one on (under ``"val"`` or ``CANDIDATE_TAG``; with ``vary``, only those that
    differ from ``config`` in those params alone), each with its traces in one input order."""
    first = {t.example_id: t for t in store.traces("val", config.digest)}
    ids = sorted(first)
    rows, found = [config], [[first[i] for i in ids]]
    for c in configs:
        if any(c.digest == r.digest for r in rows) or (
                vary is not None and not _differs_only_in(c, config, vary)):
            continue
        stored = {t.example_id: t for tag in ("val", CANDIDATE_TAG)
                  for t in store.traces(tag, c.digest)}
        if all(i in stored for i in ids):
            rows.append(c)
            found.append([stored[i] for i in ids])
    return rows, found


def _differs_only_in(a: SystemConfig, b: SystemConfig, vary: Sequence[str]) -> bool:
    """Whether ``a`` and ``b`` hold the same value for every param outside ``vary``."""
    x, y = a.to_json(), b.to_json()
    return all(x.get(comp, {}).get(name) == y.get(comp, {}).get(name)
               for comp in {*x, *y} for name in {*x.get(comp, {}), *y.get(comp, {})}
               if f"{comp}.{name}" not in vary)


@dataclass(frozen=True)
class CascadeResult:
    """A cascade over a dataset: ``result`` holds the answering traces (their rewards and
    every link's usage); ``ran[i]``: links run on example ``i``."""

    result: EvalResult
    ran: tuple[int, ...]
    cost_per_query_s: float  # every link's model seconds, per example
    # the same, a fallback paying only the components its config changes and those downstream
    # (``System.run_from`` on the answer's trace reuses the rest, outputs unchanged)
    rerun_cost_per_query_s: float = 0.0

    @property
    def escalated(self) -> float:
        return float(np.mean([r > 1 for r in self.ran])) if self.ran else 0.0


def evaluate_cascade(task: Task, examples: Sequence[Example], cascade: Cascade,
                     runtime: Runtime, store: RunStore | None = None, *, tag: str = "eval",
                     on_done: Any = None) -> CascadeResult:
    """``cascade`` on ``examples``: link ``k`` is an ``evaluate`` of its config (stored and
    resumable under ``tag``) on the examples every earlier link's output failed."""
    todo, first_traces = list(examples), None
    chosen: dict[str, Trace] = {}
    ran = {e.id: 0 for e in examples}
    usage, equiv, wall, resumed, spent, rerun = Usage(), 0.0, 0.0, 0, 0.0, 0.0
    for k, config in enumerate(cascade.configs):
        if not todo:
            break
        last = k == len(cascade.configs) - 1
        res = evaluate(task, todo, config, runtime, store, tag=tag,
                       on_done=on_done if k == 0 else None)
        usage.add(res.usage)
        equiv, wall, resumed = equiv + res.equiv_runs, wall + res.wall_s, resumed + res.resumed
        spent += sum(t.cost_s() for t in res.traces)
        fresh = rerun_components(task.system, cascade.configs[0], config)
        rerun += sum(_cost_of(t, fresh) for t in res.traces)
        if first_traces is None:
            first_traces = {t.example_id: t for t in res.traces}
        failing = []
        for e, trace in zip(todo, res.traces, strict=True):
            ran[e.id] = k + 1
            if passes(task, trace):
                chosen[e.id] = trace
            elif not last:
                failing.append(e)
        todo = failing
    traces = [chosen.get(e.id) or (first_traces or {})[e.id] for e in examples]
    mean = float(np.mean([t.reward or 0.0 for t in traces])) if traces else 0.0
    result = EvalResult(traces, mean, wall, resumed, usage, equiv)
    n = max(len(examples), 1)
    return CascadeResult(result, tuple(ran[e.id] for e in examples), spent / n, rerun / n)


def rerun_components(system: System, first: SystemConfig, other: SystemConfig) -> set[str]:
    """The components ``other`` must run on an input ``first`` already ran: those whose params
    differ and everything downstream of them (all of them for ``first`` itself)."""
    if other == first:
        return {c.name for c in system.components}
    a, b = first.to_json(), other.to_json()
    changed = {c.name for c in system.components if a.get(c.name) != b.get(c.name)}
    return changed.union(*(system.descendants(c) for c in changed))


__all__ = ["CANDIDATE_TAG", "Cascade", "CascadeFit", "CascadeResult", "answers", "check_output",
           "evaluate_cascade", "fit_cascade", "fit_chain", "output_checks", "passes",
           "rerun_components", "validated_configs", "validated_rows"]
