"""Baselines behind the same runner and budget unit (equivalent full-system runs).

* ``random_search``: draw random joint configurations (each param's kind draws its value, see
  ``_kinds``: random options for choices, random edits of the instructions for prompts), score
  each on the validation set with full runs, keep the best; stops when the next candidate would
  exceed the budget.
* ``grid_search``: every combination of the finite parameters (``Choice`` options, ``Text``
  candidates), in order, within the budget.

A per-instance ``Choice`` is searched as one global option: a baseline has no per-input
selector, but "always the strong model" is in its space, as it is in the loop's.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.data import Example
from coalign.optimize._kinds import KINDS, ParamKind, kind_of
from coalign.runtime import Runtime
from coalign.task import Task


@dataclass
class SearchResult:
    best: SystemConfig
    best_score: float
    tried: list[tuple[str, float]] = field(default_factory=list)  # (config digest, val score)
    account: CostAccount | None = None

    @property
    def equiv_runs(self) -> float:
        return self.account.equivalent_runs() if self.account else 0.0

    def consider(self, config: SystemConfig, score: float) -> None:
        """Record a scored configuration; keep it if it beats the best so far."""
        self.tried.append((config.digest, score))
        if score > self.best_score:
            self.best, self.best_score = config, score


def _score(task: Task, config: SystemConfig, val: Sequence[Example], runtime: Runtime,
           account: CostAccount) -> float:
    traces = [task.score(task.system.run(e.id, e.inputs, config, runtime), e) for e in val]
    account.add_traces("baseline_search", traces)
    return sum(t.reward or 0.0 for t in traces) / len(traces)


# called after each scored configuration or policy update: (label, score, equivalent runs so
# far); a long baseline run can show its progress (e.g. ``compare.py --status``)
OnTrial = Callable[[str, float, float], None]


def _trial(task: Task, config: SystemConfig, val: Sequence[Example], runtime: Runtime,
           account: CostAccount, result: SearchResult, on_trial: OnTrial | None) -> None:
    """Score ``config`` on ``val`` (charged to ``account``) into ``result``."""
    score = _score(task, config, val, runtime, account)
    result.consider(config, score)
    if on_trial is not None:
        on_trial(config.digest, score, account.equivalent_runs())


def random_search(task: Task, val: Sequence[Example], runtime: Runtime, budget_runs: float, *,
                  seed: int = 0, components: Sequence[str] | None = None,
                  on_trial: OnTrial | None = None,
                  kinds: Mapping[str, ParamKind] = KINDS) -> SearchResult:
    """Random joint configurations within ``budget_runs`` (the default config counts too)."""
    rng = random.Random(f"random-search:{seed}")
    system = task.system
    account = CostAccount([c.name for c in system.components])
    names = components or [c.name for c in system.components if c.params]
    result = SearchResult(system.default_config(), float("-inf"), [], account)
    _trial(task, system.default_config(), val, runtime, account, result, on_trial)
    while account.equivalent_runs() + len(val) <= budget_runs:
        config = system.default_config()
        for comp in names:
            for pname, spec in system.component(comp).params.items():
                draw = kind_of(kinds, spec, f"random_search: {comp}.{pname}").random_value
                config = config.with_value(comp, pname, draw(spec, config[comp][pname], rng))
        _trial(task, config, val, runtime, account, result, on_trial)
    return result


def grid_search(task: Task, val: Sequence[Example], runtime: Runtime, budget_runs: float,
                components: Sequence[str] | None = None,
                on_trial: OnTrial | None = None,
                kinds: Mapping[str, ParamKind] = KINDS) -> SearchResult:
    """Every combination of the params whose kind enumerates them (``Choice`` options, ``Text``
    candidates), in order, within ``budget_runs``."""
    system = task.system
    account = CostAccount([c.name for c in system.components])
    names = components or [c.name for c in system.components if c.params]
    axes = [(c, p, values) for c in names for p, spec in system.component(c).params.items()
            if (values := kind_of(kinds, spec, f"grid_search: {c}.{p}").finite_values(spec))]
    result = SearchResult(system.default_config(), float("-inf"), [], account)
    for combo in itertools.product(*(opts for _, _, opts in axes)):
        if account.equivalent_runs() + len(val) > budget_runs:
            break
        config = system.default_config()
        for (comp, pname, _), value in zip(axes, combo, strict=True):
            config = config.with_value(comp, pname, value)
        _trial(task, config, val, runtime, account, result, on_trial)
    return result
