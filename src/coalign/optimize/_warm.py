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
    from optuna.distributions import CategoricalDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    system = task.system
    axes = {f"{c}.{p}": (c, p, values) for c, p in targets
            if (values := kind_of(kinds, spec := system.component(c).params[p],
                                  f"warm_start: {c}.{p}").finite_values(spec))}
    dists = {k: CategoricalDistribution(list(range(len(v)))) for k, (_, _, v) in axes.items()}

    def scored(config: SystemConfig) -> tuple[float, dict[str, Trace]]:
        traces = {e.id: task.score(system.run(e.id, e.inputs, config, runtime), e) for e in val}
        account.add_traces(PHASE, traces.values())
        score = sum(t.reward or 0.0 for t in traces.values()) / len(traces)
        return score, traces

    score, traces = scored(start)
    best = WarmStart(start, score, traces,
                     [(start.to_json(), score, account.equivalent_runs(PHASE))])
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=5)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    picks = {k: _index(v, start[c][p]) for k, (c, p, v) in axes.items()}
    if axes and None not in picks.values():  # the start is TPE's first observation
        study.add_trial(optuna.trial.create_trial(params=picks, distributions=dists,
                                                  value=score))
    seen = {start.digest: score}
    repeats = 0
    while axes and repeats < PATIENCE and \
            account.equivalent_runs(PHASE) + len(val) <= budget:
        trial = study.ask(dists)
        config = start
        for key, (c, p, values) in axes.items():
            config = config.with_value(c, p, values[trial.params[key]])
        if config.digest in seen:  # answered from what was validated: costs nothing
            study.tell(trial, seen[config.digest])
            repeats += 1
            continue
        repeats = 0
        score, traces = scored(config)
        seen[config.digest] = score
        study.tell(trial, score)
        best.trials.append((config.to_json(), score, account.equivalent_runs(PHASE)))
        if score > best.score:  # strictly: a tie keeps the earlier (the start first)
            best.config, best.score, best.traces = config, score, traces
    return best


def _index(values: Sequence[Any], value: Any) -> int | None:
    for i, v in enumerate(values):
        if v == value:
            return i
    return None
