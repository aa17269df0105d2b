"""The step ledger as the report shows it: one row per loop step, and the current system's
validation score over the steps (the anytime curve's points).

A step ends in one of three decisions: ``accepted`` (a candidate validated and taken),
``rejected`` (a candidate validated and refused by the gate, or stopped early as clearly worse)
and ``skipped`` (nothing validated: no change proposed, the proposal already rejected under this
config, no local reward to draw, a settled loop). A skipped step has no validation score after
it, which is how ``coalign optimize`` tells them apart too; ledgers of every format record it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coalign.report._format import reset_note, summarize_value
from coalign.report._intervals import Interval

__all__ = ["CurvePoint", "StepRow", "curve", "number", "step_rows"]


@dataclass(frozen=True)
class StepRow:
    step: int
    accepted: bool
    component: str
    param: str
    value: str  # one-line summary of the proposed value
    reason: str
    val_before: float | None
    val_after: float | None
    seconds: float | None
    # what the local optimizer compared: (value summary, mean local reward), best first
    candidates: tuple[tuple[str, float], ...] = ()
    runs: float | None = None  # equivalent full-system runs spent so far (the step's ledger)
    # validation after - before, paired over the inputs, with its bootstrap interval (accepted
    # steps: both configs' validation traces are stored; a refused candidate's are not)
    interval: Interval | None = None

    @property
    def decision(self) -> str:
        """``accepted``, ``rejected`` (validated and refused) or ``skipped`` (nothing
        validated)."""
        if self.accepted:
            return "accepted"
        return "rejected" if self.val_after is not None else "skipped"


@dataclass(frozen=True)
class CurvePoint:
    """Validation score of the current system after ``step`` (-1: before the first step)."""

    step: int
    score: float
    candidate: float | None  # the proposal's validation score (None: nothing was validated)
    accepted: bool
    runs: float | None = None  # equivalent runs spent by then (None: not recorded)
    test: float | None = None  # the current system's test metric, where stored


def number(value: Any) -> float | None:
    """A stored number as a float; anything else (bool included) as None."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def step_rows(steps: Sequence[tuple[int, str, dict]]) -> tuple[StepRow, ...]:
    return tuple(StepRow(step, state == "accepted", str(rec.get("component", "?")),
                         str(rec.get("param", "?")),
                         summarize_value(rec.get("value")) + reset_note(rec.get("reset")),
                         _reason(rec), number(rec.get("val_before")),
                         number(rec.get("val_after")), number(rec.get("seconds")),
                         _candidates(rec.get("candidates")) + _variants(rec),
                         _spent(rec.get("ledger")))
                 for step, state, rec in steps)


def _spent(ledger: Any) -> float | None:
    """A ledger's total equivalent runs."""
    runs = ledger.get("runs") if isinstance(ledger, Mapping) else None
    values = [number(v) for v in runs.values()] if isinstance(runs, Mapping) else [None]
    return None if None in values else sum(v for v in values if v is not None)


def _reason(rec: dict) -> str:
    reason = str(rec.get("reason", ""))
    if reason.startswith("validation stopped early") and isinstance(rec.get("val_checked"), int):
        # its val after is the current score plus the paired difference on those inputs
        reason += f" (on the first {rec['val_checked']} validation inputs; val after estimated)"
    return reason


def _candidates(raw: Any) -> tuple[tuple[str, float], ...]:
    """Ledger candidates (runs before they were recorded have none); malformed ones skipped."""
    out = []
    for c in raw if isinstance(raw, list) else []:
        score = number(c.get("local_reward")) if isinstance(c, Mapping) else None
        if score is not None:
            out.append((summarize_value(c.get("value")), score))
    return tuple(out)


def _variants(rec: dict) -> tuple[tuple[str, float], ...]:
    """A switched choice's variants (as proposed / siblings reset), scored on the component's
    outputs: listed after the options' own scores."""
    out = []
    for v in rec.get("variants") or []:
        score = number(v.get("local_reward")) if isinstance(v, Mapping) else None
        if score is not None:
            note = reset_note(v.get("reset")) or " (as proposed)"
            out.append((summarize_value(rec.get("value")) + note, score))
    return tuple(out)


def curve(rows: Sequence[StepRow], tests: Mapping[int, float] | None = None,
          start_runs: float | None = None) -> tuple[CurvePoint, ...]:
    """The current system's validation score over iterations, starting before step 0, with
    the runs spent by then and the current system's test metric where ``tests`` (step -> test
    metric after that step; -1: before any) has it."""
    tests = tests or {}
    points: list[CurvePoint] = []
    test = tests.get(-1)
    for row in rows:
        if row.val_before is None:
            continue
        if not points:
            points.append(CurvePoint(-1, row.val_before, None, False, start_runs, test))
        now = row.val_before
        if row.accepted and row.val_after is not None:
            now, test = row.val_after, tests.get(row.step)
        points.append(CurvePoint(row.step, now, row.val_after, row.accepted, row.runs, test))
    return tuple(points)
