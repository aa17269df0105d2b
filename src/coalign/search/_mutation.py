"""The mutation operator contract: what a mutator sees, what it returns.

A mutator gets a read-only snapshot of the search state plus the round's :class:`ChildSlot` s and
returns one :class:`Proposal` per slot. It never writes the state; the engine registers the
proposals as candidates. The default mutator is the LLM reviewer (``_reviewer.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from coalign.search._prompt import Demo, PromptSpec
from coalign.search._rounds import ChildSlot
from coalign.search._state import ROOT_VERSION, SearchState


@dataclass(frozen=True)
class Proposal:
    parent: str
    spec: PromptSpec
    prompt: str
    secondary_parent: str | None = None
    rationale: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FailureCell:
    """A confusion cell: gold label ``gold`` answered as ``pred`` (``pred`` None: any miss)."""

    gold: str
    pred: str | None
    example_ids: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.gold}->{self.pred}" if self.pred is not None else f"missed {self.gold}"


class TaskBrief(Protocol):
    """What a mutator may know about the task (never the dev labels beyond per-example records)."""

    description: str
    labels: Sequence[str]

    def example_question(self, example_id: str) -> str:
        """The question of a dev example (no context), to ground a hypothesis."""
        ...

    def demos(self, label: str, k: int, exclude: Sequence[str]) -> list[Demo]:
        """Up to ``k`` worked examples with gold ``label`` from the demo pool, deterministically."""
        ...

    def lookup_demo(self, example_id: str) -> Demo: ...


@runtime_checkable
class Mutator(Protocol):
    def propose(self, snapshot: SearchState, slots: Sequence[ChildSlot]) -> list[Proposal]: ...

    def exit_signal(self, snapshot: SearchState) -> bool: ...


class BaseMutator:
    """No-op hooks; subclasses implement :meth:`propose`."""

    def propose(self, snapshot: SearchState, slots: Sequence[ChildSlot]) -> list[Proposal]:
        raise NotImplementedError

    def exit_signal(self, snapshot: SearchState) -> bool:
        return False


def parent_spec(snapshot: SearchState, version: str) -> PromptSpec:
    if version == ROOT_VERSION:
        return PromptSpec.from_dict(snapshot.base_spec)
    return PromptSpec.from_dict(snapshot.candidates[version].spec)


def parent_records(snapshot: SearchState, version: str) -> list[dict]:
    """Per-example ``{id, gold, pred}`` records of the parent (the baseline's for ``base``)."""
    if version == ROOT_VERSION:
        return list(snapshot.baseline.get("per_example", []))
    return list(snapshot.candidates[version].metrics.get("per_example", []))


def failure_cells(records: Sequence[dict], labels: Sequence[str]) -> list[FailureCell]:
    """Off-diagonal confusion cells, most errors first (ties by name, for determinism).

    Without records (cold start) every label is a "missed" cell, so seeds cover every label.
    """
    if not records:
        return [FailureCell(label, None) for label in labels]
    counts = Counter((r["gold"], r["pred"]) for r in records if r["gold"] != r["pred"])
    cells = sorted(counts, key=lambda gp: (-counts[gp], str(gp[0]), str(gp[1])))
    out = []
    for gold, pred in cells:
        ids = tuple(r["id"] for r in records if r["gold"] == gold and r["pred"] == pred)
        out.append(FailureCell(gold, pred, ids))
    return out or [FailureCell(label, None) for label in labels]
