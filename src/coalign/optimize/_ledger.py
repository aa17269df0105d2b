"""The cost ledger in the reference's Table 11 form: where the equivalent full-system runs go.

Three phases: LRF training (stage 1 pair collection), LRF adaptation (stage 2, only after an
accepted step) and global validation (the gate, discounted because ``run_from`` re-runs only the
changed component and its descendants). Any other phase (e.g. baseline search) is listed as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coalign.costs import PHASES
from coalign.errors import StoreError
from coalign.system import System

if TYPE_CHECKING:
    from coalign.store import RunStore


def prefix_discount(system: System) -> float:
    """Mean fraction of a full run that ``run_from`` re-executes, over all components.

    With equal shares, re-running from component k costs (1 + #descendants(k)) / K; for a chain of
    three that is (3/3 + 2/3 + 1/3) / 3 = 2/3, the reference's validation discount.
    """
    k = len(system.components)
    return sum((1 + len(system.descendants(c.name))) / k for c in system.components) / k


def planned_runs(*, pairs_per_component: int, runs_per_pair: float, adapt_updates: int,
                 fresh_pairs: int, val_size: int, validations: int,
                 discount: float) -> dict[str, float]:
    """The reference's up-front arithmetic of an optimization budget, per phase."""
    return {
        "lrf_train": pairs_per_component * runs_per_pair,
        "adapt": adapt_updates * fresh_pairs * runs_per_pair,
        "validation": val_size * validations * discount,
    }


@dataclass(frozen=True)
class Ledger:
    """Measured equivalent runs per phase plus LLM calls, as one table. ``llm_calls`` are the
    requests the model answered; ``cache_hits`` those the response cache answered (a resumed or
    replayed run makes fewer calls for the same work)."""

    runs: Mapping[str, float]
    llm_calls: Mapping[str, int]
    cache_hits: Mapping[str, int] = field(default_factory=dict)

    @property
    def total_runs(self) -> float:
        return sum(self.runs.values())

    def rows(self) -> list[tuple[str, float, int, int]]:
        """(phase, equivalent runs, LLM calls, cache hits) in the reference's order."""
        names = [p for p in PHASES if p in self.runs] + sorted(set(self.runs) - set(PHASES))
        return [(p, self.runs[p], self.llm_calls.get(p, 0), self.cache_hits.get(p, 0))
                for p in names]

    def to_json(self) -> dict:
        return {"runs": dict(self.runs), "llm_calls": dict(self.llm_calls),
                "cache_hits": dict(self.cache_hits), "total_runs": self.total_runs}


# What resume reads back from each step ledger row, and its JSON type(s)
STEP_FIELDS: dict[str, tuple[type, ...]] = {
    "component": (str,), "param": (str,), "value": (object,), "reason": (str,),
    "val_before": (int, float), "val_after": (int, float, type(None)), "seconds": (int, float),
    "config": (dict,), "policies": (list,), "lrf_checkpoint": (str, type(None)),
    "account": (dict, type(None)),
}


def checked_steps(store: RunStore) -> list[tuple[int, str, dict[str, Any]]]:
    """The store's step ledger, each row checked to hold what resume rebuilds from: a damaged
    or hand-edited row is refused by name instead of failing somewhere inside the loop."""
    steps = store.steps()
    for t, _, rec in steps:
        bad = next((n for n, kinds in STEP_FIELDS.items()
                    if n not in rec or not isinstance(rec[n], kinds)), None)
        if bad is None and not all(isinstance(p, list) and len(p) == 2
                                   and all(isinstance(x, str) for x in p)
                                   for p in rec["policies"]):
            bad = "policies"
        selectors = rec.get("selectors", {})
        if bad is None and not (isinstance(selectors, dict)
                                and all(isinstance(d, str) for d in selectors.values())):
            bad = "selectors"
        if bad is not None:
            raise StoreError(f"run store {store.run_dir}: ledger step {t} has no valid {bad!r}; "
                             "the store was altered (use a new --run-dir)")
    return steps


def checked_meta(store: RunStore, key: str, *kinds: type) -> Any:
    """``store.get_meta(key)`` if absent or of one of ``kinds``; else refused by name."""
    value = store.get_meta(key)
    if value is not None and not isinstance(value, kinds):
        raise StoreError(f"run store {store.run_dir}: {key!r} is a {type(value).__name__}, "
                         "not what this coalign wrote; the store was altered (use a new "
                         "--run-dir)")
    return value
