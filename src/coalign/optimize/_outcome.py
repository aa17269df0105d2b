"""What one loop step decided (``Outcome``), as the ledger stores it and resume reads it back.

A step ends in one ``StepState``; the ledger row stores it (``step_state``) beside the
human-readable ``reason``. Resume rebuilds the rejection memory from the states alone. Rows
written before the state existed (ledger format 1) carry only the reason; their state is read
from the fixed reason strings of that format, so their run dirs still resume.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from coalign.config import SystemConfig
from coalign.errors import StoreError
from coalign.optimize._base import Scored, value_key
from coalign.optimize._choice import SELECTOR, LrfSelector
from coalign.optimize._settings import window
from coalign.pairs import canonical_json, to_jsonable
from coalign.trace import Trace

LEDGER_FORMAT = 2  # 1: no ``step_state`` (reason strings only); 2: ``step_state``, ``selector``


class StepState(enum.Enum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"  # validated on every input, not better
    STOPPED_EARLY = "stopped_early"  # validation stopped on a prefix: clearly worse
    NO_CHANGE = "no_change"  # nothing proposed beat the current value
    ALREADY_REJECTED = "already_rejected"  # the proposal was rejected under this config
    NO_REWARD = "no_reward"  # no component has a local reward worth drawing
    SETTLED = "settled"  # every drawable finite slot proposed no change on the whole train split

    @property
    def rejected(self) -> bool:
        """Validated and turned down: remembered until the next accepted step."""
        return self in (StepState.REJECTED, StepState.STOPPED_EARLY)


REASONS = {StepState.ACCEPTED: "validation improved",
           StepState.REJECTED: "validation did not improve",
           StepState.STOPPED_EARLY: "validation stopped early: worse so far",  # Gate.early_reject
           StepState.NO_CHANGE: "no change proposed",
           StepState.ALREADY_REJECTED: "already rejected under this config",
           StepState.SETTLED: "settled: every drawable slot proposed no change on every train "
                              "input under this config"}
REJECTED, REJECTED_EARLY = REASONS[StepState.REJECTED], REASONS[StepState.STOPPED_EARLY]


class Tried(NamedTuple):
    """A proposal the gate rejected: its slot, the value's canonical JSON (None: the per-instance
    LRF selector) and the sibling params reset with it (``_coupled``)."""

    component: str
    param: str
    value: str | None
    reset: tuple[str, ...] = ()


def tried(component: str, param: str, value: Any, reset: Sequence[str] = ()) -> Tried:
    key = None if isinstance(value, LrfSelector) else value_key(value)
    return Tried(component, param, key, tuple(sorted(reset)))


@dataclass(frozen=True)
class Proposal:
    """A candidate for the gate: the value, the whole config and selectors it makes."""

    value: Any
    config: SystemConfig
    policies: Mapping[tuple[str, str], str]
    reset: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """One step's decision: what ``_step.step`` returns, the loop commits and the ledger
    stores (``row``)."""

    component: str
    param: str
    state: StepState
    before: float
    value: Any = None
    reason: str = ""  # default: the state's
    after: float | None = None
    reset: tuple[str, ...] = ()
    checked: int = 0  # validation inputs the candidate ran on
    candidates: Sequence[Scored] = ()  # what the proposal was chosen from, as scored
    variants: Sequence[tuple[tuple[str, ...], float]] = ()  # (reset, local reward), if ranked
    proposal: Proposal | None = None  # validated ones only
    traces: Mapping[str, Trace] = field(default_factory=dict)  # its validation traces
    # its reward per validation input, in validation order, when validated on all of them
    val_rewards: tuple[float, ...] = ()
    val_cost: float = 0.0  # then its mean model seconds per validation query
    carry: tuple[Any, Any] | None = None  # weights trained on (value, JSON form): ``_carry``

    @property
    def accepted(self) -> bool:
        return self.state is StepState.ACCEPTED

    @property
    def rejection(self) -> Tried:
        """How the rejection memory remembers this proposal."""
        return tried(self.component, self.param, self.value, self.reset)

    @property
    def why(self) -> str:
        return self.reason or REASONS[self.state]

    def row(self) -> dict[str, Any]:
        """The decision's part of the ledger row (the loop adds the run's state after it)."""
        return {
            "component": self.component, "param": self.param, "value": to_jsonable(self.value),
            "selector": isinstance(self.value, LrfSelector), "reason": self.why,
            "step_state": self.state.value, "format": LEDGER_FORMAT, "reset": list(self.reset),
            "variants": [{"reset": list(r), "local_reward": x} for r, x in self.variants],
            "val_before": self.before, "val_after": self.after, "val_checked": self.checked,
            # the score model of the portfolio loop is refitted from these on resume
            **({"val_rewards": list(self.val_rewards), "val_cost": self.val_cost,
                "candidate": self.proposal.config.to_json()}
               if self.val_rewards and self.proposal is not None and not self.proposal.policies
               else {}),
            **({"carry": self.carry[1]} if self.carry is not None else {}),
            # what the proposal was chosen from, best first: why it proposed what it did
            "candidates": [{"value": to_jsonable(s.value), "local_reward": s.reward}
                           for s in sorted(self.candidates, key=lambda s: -s.reward)[:10]]}


@dataclass
class StepRecord:
    step: int
    component: str
    param: str
    accepted: bool
    val_before: float
    val_after: float | None
    value: Any
    reason: str
    seconds: float
    reset: tuple[str, ...] = ()  # sibling params put back at their starting values with it
    state: StepState | None = None  # the step's outcome (None: a ledger row too old to say)


_OLD_REASONS = {v: k for k, v in REASONS.items()}  # format 1 wrote these verbatim


def step_state(t: int, state: str, rec: Mapping[str, Any]) -> StepState:
    """A ledger row's state: stored since format 2, read from the reason in format 1."""
    fmt = rec.get("format", 1)
    if not isinstance(fmt, int) or fmt > LEDGER_FORMAT:
        raise StoreError(f"ledger step {t} is in ledger format {fmt!r}; this coalign reads "
                         f"formats 1-{LEDGER_FORMAT} (upgrade coalign or use a new --run-dir)")
    if "step_state" in rec:
        try:
            return StepState(rec["step_state"])
        except ValueError:
            raise StoreError(f"ledger step {t} has unknown step_state {rec['step_state']!r} "
                             f"(ledger format {fmt})") from None
    if state == "accepted":
        return StepState.ACCEPTED
    return _OLD_REASONS.get(rec["reason"], StepState.NO_REWARD)


def rejections(steps: Iterable[tuple[int, str, Mapping[str, Any]]]) -> frozenset[Tried]:
    """The proposals rejected since the last accepted step of a ledger."""
    out: set[Tried] = set()
    for t, state, rec in steps:
        s = step_state(t, state, rec)
        if s is StepState.ACCEPTED:
            out = set()
        elif s.rejected:
            # format 1 recorded the selector only as its JSON form
            selector = rec.get("selector", rec["value"] == SELECTOR.to_json())
            out.add(Tried(rec["component"], rec["param"],
                          None if selector else canonical_json(rec["value"]),
                          tuple(sorted(rec.get("reset", ())))))
    return frozenset(out)


def unchanged_inputs(steps: Iterable[tuple[int, str, Mapping[str, Any]]], n_train: int,
                     search_size: int) -> dict[tuple[str, str], frozenset[int]]:
    """Per slot, the train inputs (indices) whose search windows proposed no change since the
    last accepted step of a ledger (rule 19)."""
    out: dict[tuple[str, str], frozenset[int]] = {}
    for t, state, rec in steps:
        s = step_state(t, state, rec)
        if s is StepState.ACCEPTED:
            out = {}
        elif s is StepState.NO_CHANGE:
            key = (rec["component"], rec["param"])
            out[key] = out.get(key, frozenset()) | window_indices(t, n_train, search_size)
    return out


def window_indices(t: int, n_train: int, search_size: int) -> frozenset[int]:
    """The train indices of step ``t``'s search sample (``_settings.window``)."""
    return frozenset(window(range(n_train), t, search_size))

