"""The portfolio loop (``proposals: portfolio``): global proposals beside the local ones, one
score model of validation arbitrating both.

Each step is either a *local* step (a component drawn, its local reward picking a value, as
in Algorithm 1) or a *global* step: the score model (``_surrogate``) fitted on every config
validated so far draws the next config over all finite slots by Thompson sampling. Which arm a
step takes is itself a Thompson draw from each arm's record (accepted steps over steps taken),
so where the local rewards carry no signal the loop spends its budget like a good global
search, and where they do the local arm wins steps and is drawn more. Local rewards are paid
for lazily, when a component is first drawn, so the first validations come at once.

Both arms share the gate: a candidate is accepted when the score model, refitted with its
validation rewards, puts its expected validation score above the current config's; this
discounts a candidate that won on a small validation set by noise. A config validated once is
never proposed again by the global arm.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from coalign.config import SystemConfig
from coalign.optimize._outcome import Outcome, Proposal, StepState
from coalign.optimize._surrogate import ENUMERATE, Observation, Picks, Posterior, additive, fit

GLOBAL = ("*", "global")  # a global step's (component, param) in the ledger
ARMS = ("global", "local", "weights")  # the weights arm's steps: component "*" too


@dataclass(frozen=True)
class Validated:
    """A config validated on the whole validation set, its rewards in validation order."""

    config: SystemConfig
    rewards: tuple[float, ...]
    cost: float = 0.0  # mean model seconds per validation query

    @property
    def mean(self) -> float:
        return sum(self.rewards) / len(self.rewards) if self.rewards else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"config": self.config.to_json(), "rewards": list(self.rewards),
                "cost": self.cost}


@dataclass(frozen=True)
class Axes:
    """The finite slots the score model spans: ``(component, param, values)`` each."""

    slots: tuple[tuple[str, str, tuple[Any, ...]], ...]

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(v) for _, _, v in self.slots)

    def picks(self, config: SystemConfig) -> Picks | None:
        """The config's value index per slot; None if a value is outside the slot's list."""
        out = []
        for c, p, values in self.slots:
            index = next((i for i, v in enumerate(values) if v == config[c][p]), None)
            if index is None:
                return None
            out.append(index)
        return tuple(out)

    def config(self, base: SystemConfig, picks: Picks) -> SystemConfig:
        for (c, p, values), i in zip(self.slots, picks, strict=True):
            base = base.with_value(c, p, values[i])
        return base


def axes_of(system: Any, targets: Sequence[tuple[str, str]], kinds: Mapping[str, Any],
            policies: Mapping[tuple[str, str], str]) -> Axes:
    """The targets whose kind lists a finite set of values, less those chosen per input."""
    slots = []
    for c, p in sorted(targets):
        spec = system.component(c).params[p]
        values = kinds[spec.kind].finite_values(spec) if spec.kind in kinds else None
        if values and (c, p) not in policies:
            slots.append((c, p, tuple(values)))
    return Axes(tuple(slots))


def posterior(axes: Axes, validated: Iterable[Validated]) -> Posterior | None:
    """The score model on the validated configs whose values the axes hold (None: none)."""
    obs = [Observation(v.config.digest, picks, v.rewards) for v in validated
           if (picks := axes.picks(v.config)) is not None]
    return fit(axes.sizes, obs) if obs else None


def better(axes: Axes, validated: Sequence[Validated], current: SystemConfig,
           candidate: Validated) -> bool:
    """The gate: the candidate's expected validation score, with its rewards added to the
    model, is above the current config's."""
    model = posterior(axes, [*validated, candidate])
    now, new = axes.picks(current), axes.picks(candidate.config)
    if model is None or now is None or new is None:  # outside the model: the raw means
        return sum(candidate.rewards) > sum(_rewards_of(validated, current))
    return (model.mean(new, candidate.config.digest)
            > model.mean(now, current.digest) + 1e-12)


def _rewards_of(validated: Sequence[Validated], config: SystemConfig) -> tuple[float, ...]:
    return next((v.rewards for v in validated if v.config.digest == config.digest), ())


def admissible(axes: Axes, validated: Sequence[Validated], current: SystemConfig,
               cap: float | None) -> Callable[[Picks], bool]:
    """Which configs the global arm may propose: not validated yet (the other params as now),
    not the current one, and, under a cost cap, within it by an additive fit of the validated
    configs' costs (model seconds add up over components; the gate still refuses one over)."""
    seen = {v.config.digest for v in validated}
    cost: Callable[[Picks], float] | None = None
    if cap is not None:
        rows = [(p, v.cost) for v in validated if (p := axes.picks(v.config)) is not None]
        if rows:
            cost = additive(axes.sizes, [p for p, _ in rows], [c for _, c in rows])
    seen.add(current.digest)  # the current config, validated under a selector or not
    return lambda p: (axes.config(current, p).digest not in seen
                      and (cost is None or cost(p) <= cap + 1e-9))


def propose(axes: Axes, validated: Sequence[Validated], current: SystemConfig,
            rng: np.random.Generator, cap: float | None = None) -> SystemConfig | None:
    """The global arm's next config: the current one with the finite slots a posterior draw
    likes best among the ``admissible`` ones (None: none is)."""
    model = posterior(axes, validated)
    if model is None:
        return None
    picks = model.thompson(rng, admissible(axes, validated, current, cap))
    return None if picks is None else axes.config(current, picks)


def exhausted(axes: Axes, validated: Sequence[Validated], current: SystemConfig,
              cap: float | None = None) -> bool:
    """No config of the axes is left to propose (a space too large to enumerate never is)."""
    n = math.prod(axes.sizes) if axes.slots else 0
    if n == 0:
        return True
    if n > ENUMERATE:
        return False
    allowed = admissible(axes, validated, current, cap)
    return not any(allowed(p) for p in itertools.product(*(range(k) for k in axes.sizes)))


def pick_arm(records: Mapping[str, tuple[int, float]], available: Sequence[str],
             rng: np.random.Generator, prior_runs: float) -> str:
    """Thompson between the available arms on their (accepted steps, runs spent) records:
    each arm's rate of accepted steps per run is drawn from its Gamma posterior (one accepted
    step per ``prior_runs`` runs a priori), so an arm whose steps cost more must win more."""
    def rate(a: str) -> float:
        won, runs = records.get(a, (0, 0.0))
        return float(rng.gamma(1 + won, 1.0 / (prior_runs + runs)))

    draws = {a: rate(a) for a in available}
    return max(available, key=lambda a: (draws[a], a == "global"))


def arm_of(component: str, param: str) -> str:
    if component == GLOBAL[0]:
        return "global" if param == GLOBAL[1] else "weights"
    return "local"


def record(records: Mapping[str, tuple[int, float]], arm: str, accepted: bool, spent: float
           ) -> dict[str, tuple[int, float]]:
    won, runs = records.get(arm, (0, 0.0))
    return {**records, arm: (won + int(accepted), runs + float(spent))}


def from_ledger(system: Any, steps: Iterable[tuple[int, str, Mapping[str, Any]]]
                ) -> tuple[dict[str, tuple[int, float]], tuple[Validated, ...]]:
    """Each arm's record and the validated configs, rebuilt from a ledger's rows."""
    arms: dict[str, tuple[int, float]] = {}
    validated: list[Validated] = []
    for _, state, row in steps:
        arms = record(arms, arm_of(row["component"], row["param"]), state == "accepted",
                      float(row.get("spent", 0.0)))
        if row.get("val_rewards") and row.get("candidate"):
            validated.append(Validated(SystemConfig.from_json(system, row["candidate"]),
                                       tuple(float(r) for r in row["val_rewards"]),
                                       float(row.get("val_cost", 0.0))))
    return arms, tuple(validated)


def first_validated(store: Any, system: Any, config: SystemConfig, traces: Sequence[Any]
                    ) -> Validated:
    """The config a portfolio run started validating, with its validation ``traces`` (in
    validation order): kept in the run store the first time, so a resumed run fits its score
    model on the same configs."""
    first = store.get_meta("portfolio_start")
    if first is None:
        first = {"config": config.to_json(), "rewards": [t.reward or 0.0 for t in traces],
                 "cost": sum(t.cost_s() for t in traces) / len(traces)}
        store.set_meta("portfolio_start", first)
    return Validated(SystemConfig.from_json(system, first["config"]),
                     tuple(float(r) for r in first["rewards"]), float(first["cost"]))


def global_proposal(system_order: Sequence[str], axes: Axes, at_config: SystemConfig,
                    config: SystemConfig, policies: Mapping[tuple[str, str], str]
                    ) -> tuple[str, Proposal]:
    """The first component the config changes (validation re-runs from it) and its proposal,
    whose value lists the changed slots."""
    changed = {f"{c}.{p}": config[c][p] for c, p, _ in axes.slots
               if config[c][p] != at_config[c][p]}
    first = next(c for c in system_order if any(k.split(".", 1)[0] == c for k in changed))
    return first, Proposal(changed, config, dict(policies))


def exhausted_outcome(before: float) -> Outcome:
    return Outcome(*GLOBAL, StepState.SETTLED, before,
                   reason="every config of the finite slots was validated")
