"""Warm start: a global search before the loop's stage 1.

The loop's stage 1 pays for rollouts on every train input before its first validation, so at a
small budget it returns the start while a global search has validated a dozen configs. With
``warm_start: N`` the loop first spends up to N equivalent runs on Optuna's TPE over the params
whose kind lists its values (choices, text candidates; the rest stay at their start), each
config scored on the validation set, and starts the loop from the best one when it is strictly
better than the start on validation. The local steps then refine a config a global search
found, and any budget below N gets the global search's answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.data import Example
from coalign.optimize._kinds import ParamKind, kind_of
from coalign.runtime import Runtime
from coalign.task import Task
from coalign.trace import Trace

PHASE = "warm_start"
# consecutive proposals TPE had already made before the search counts as settled
PATIENCE = 30


@dataclass
class WarmStart:
    """The search's answer: the best config on validation (the start unless one beat it), its
    scored validation traces, and every distinct config tried as (config JSON, validation
    score, equivalent runs spent once it was known)."""

    config: SystemConfig
    score: float
    traces: dict[str, Trace]
    trials: list[tuple[dict[str, Any], float, float]] = field(default_factory=list)

    def trials_json(self) -> list[dict[str, Any]]:
        return [{"config": c, "score": s, "spent": r} for c, s, r in self.trials]


def warm_start(task: Task, val: Sequence[Example], runtime: Runtime, account: CostAccount,
               budget: float, targets: Sequence[tuple[str, str]], start: SystemConfig, *,
               seed: int, kinds: Mapping[str, ParamKind]) -> WarmStart:
    """TPE over ``targets`` with finite values, from ``start``, until the next validation would
    spend more than ``budget`` equivalent runs in this phase (charged to ``account``)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    system = task.system
    # sorted by slot name, as a replay table's space lists them: the same TPE as the baseline
    axes = {f"{c}.{p}": (c, p, values) for c, p in sorted(targets)
            if (values := kind_of(kinds, spec := system.component(c).params[p],
                                  f"warm_start: {c}.{p}").finite_values(spec))}

    def scored(config: SystemConfig) -> tuple[float, dict[str, Trace]]:
        traces = {e.id: task.score(system.run(e.id, e.inputs, config, runtime), e) for e in val}
        account.add_traces(PHASE, traces.values())
        score = sum(t.reward or 0.0 for t in traces.values()) / len(traces)
        return score, traces

    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=5)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    found: list[WarmStart] = []  # the best so far (none before the start is scored)
    seen: dict[str, float] = {}

    def consider(config: SystemConfig) -> float:
        score, traces = scored(config)
        seen[config.digest] = score
        if not found:
            found.append(WarmStart(config, score, traces))
        elif score > found[0].score:  # strictly: a tie keeps the earlier (the start first)
            found[0].config, found[0].score, found[0].traces = config, score, traces
        found[0].trials.append((config.to_json(), score, account.equivalent_runs(PHASE)))
        return score

    picks = {k: _index(v, start[c][p]) for k, (c, p, v) in axes.items()}
    if axes and None not in picks.values():
        study.enqueue_trial(picks)  # the start is TPE's first trial
    else:
        consider(start)  # TPE cannot propose it: scored beside the search
    combos = math.prod(len(v) for _, _, v in axes.values())
    repeats = 0
    while axes and repeats < PATIENCE and len(seen) < combos:
        trial = study.ask()
        config = start
        for key, (c, p, values) in axes.items():
            config = config.with_value(c, p, values[trial.suggest_categorical(
                key, list(range(len(values))))])
        if config.digest in seen:  # answered from what was validated: costs nothing
            study.tell(trial, seen[config.digest])
            repeats += 1
            continue
        if seen and account.equivalent_runs(PHASE) + len(val) > budget:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            break
        repeats = 0
        study.tell(trial, consider(config))
    return found[0]


def _index(values: Sequence[Any], value: Any) -> int | None:
    for i, v in enumerate(values):
        if v == value:
            return i
    return None
