"""Local reward alignment as the report shows it: per component, its held-out pairwise accuracy
with the number of pairs, a Wilson interval, and whether there were enough pairs to say
anything (a figure on a handful of pairs, such as 1.000 on 3, is noise)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coalign.budget import budget_default
from coalign.report._steps import number
from coalign.stats import wilson


@dataclass(frozen=True)
class AlignmentRow:
    component: str
    pairs: int | None
    accuracy: float | None
    inputs: int | None = None  # runs recorded before per-input figures have neither
    input_accuracy: float | None = None
    interval: tuple[float, float] | None = None  # 95% Wilson interval of ``accuracy``
    too_few: bool = False  # measured on fewer pairs than the loop acts on: not meaningful


def min_pairs(run_config: Any) -> int:
    """The fewest held-out pairs the run's loop trusts an alignment figure on
    (``budget.min_alignment_pairs``: fewer and it draws the component regardless)."""
    budget = run_config.get("budget") if isinstance(run_config, Mapping) else None
    stored = budget.get("min_alignment_pairs") if isinstance(budget, Mapping) else None
    if isinstance(stored, int) and not isinstance(stored, bool):
        return stored
    # not recorded (a store not written by coalign optimize): the run config's default
    return int(budget_default("min_alignment_pairs"))


def alignment_rows(raw: Any, fewest: int | None = None) -> tuple[AlignmentRow, ...]:
    """Rows of the stored ``lrf_alignment``; ``fewest``: pairs below which a figure is marked
    not meaningful (default: the run config's default ``min_alignment_pairs``)."""
    if not isinstance(raw, Mapping):
        return ()
    fewest = min_pairs(None) if fewest is None else fewest
    out = []
    for comp, entry in raw.items():
        entry = entry if isinstance(entry, Mapping) else {}
        pairs, inputs = entry.get("pairs"), entry.get("inputs")
        pairs = pairs if isinstance(pairs, int) and not isinstance(pairs, bool) else None
        accuracy = number(entry.get("accuracy"))
        out.append(AlignmentRow(
            str(comp), pairs, accuracy, inputs if isinstance(inputs, int) else None,
            number(entry.get("input_accuracy")),
            None if accuracy is None or not pairs else wilson(accuracy, pairs),
            pairs is not None and pairs < fewest))
    return tuple(out)
