"""Where a loop run stands before a step (``Position``): one value that each committed step
replaces (``Position.after``), so a step is a function of it and resume rebuilds it from the
ledger."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coalign.config import SystemConfig
from coalign.optimize._carry import carried_after
from coalign.optimize._outcome import Outcome, StepState, Tried
from coalign.optimize._portfolio import Validated, arm_of, record
from coalign.rewards import LocalRewardModel
from coalign.trace import Trace


@dataclass(frozen=True)
class Position:
    """Where the run stands before a step: the loop's whole run state, one value that each
    committed step replaces (``after``)."""

    config: SystemConfig
    policies: Mapping[tuple[str, str], str]  # per-instance slot -> its frozen reward's digest
    val_traces: Mapping[str, Trace]
    rejected: frozenset[Tried]  # since the last accepted step
    reward: LocalRewardModel
    # per slot, the train inputs whose search windows proposed no change since the last
    # accepted step (rule 19)
    unchanged: Mapping[tuple[str, str], frozenset[int]] = dataclasses.field(default_factory=dict)
    # every config validated on the whole validation set under no selector (the portfolio
    # loop's score model is fitted on them), and each arm's (accepted steps, runs spent)
    validated: tuple[Validated, ...] = ()
    arms: Mapping[str, tuple[int, float]] = dataclasses.field(default_factory=dict)
    # per slot, the weights its training run carries on from (``_carry``)
    carried: Mapping[tuple[str, str], Any] = dataclasses.field(default_factory=dict)

    @property
    def score(self) -> float:
        traces = self.val_traces.values()
        return sum(t.reward or 0.0 for t in traces) / len(traces) if traces else 0.0

    def after(self, out: Outcome, searched: frozenset[int], spent: float = 0.0) -> Position:
        """Where the run stands once ``out`` is committed: an accepted proposal is the new
        config, and rejections and settled inputs (``searched``: this step's search window)
        no longer say anything under it; a rejection is remembered; a step that proposed
        no change marks its search inputs as settled for its slot; the weights a step not
        taken trained to are carried into its slot's next step (``_carry``). ``spent``: the
        step's equivalent runs, on its arm's record."""
        p = out.proposal
        key = (out.component, out.param)
        at = dataclasses.replace(
            self, arms=record(self.arms, arm_of(*key), out.accepted, spent),
            carried=carried_after(self.carried, key, out.accepted,
                                  out.carry[0] if out.carry else None))
        if p is not None and out.val_rewards and not p.policies:
            at = dataclasses.replace(at, validated=(*at.validated, Validated(
                p.config, out.val_rewards, out.val_cost)))
        if out.accepted and p is not None:
            return dataclasses.replace(at, config=p.config, policies=dict(p.policies),
                                       val_traces=dict(out.traces), rejected=frozenset(),
                                       unchanged={})
        if out.state.rejected and p is not None:
            return dataclasses.replace(at, rejected=at.rejected | {out.rejection})
        if out.state is StepState.NO_CHANGE:
            unchanged = {**at.unchanged, key: at.unchanged.get(key, frozenset()) | searched}
            return dataclasses.replace(at, unchanged=unchanged)
        return at
