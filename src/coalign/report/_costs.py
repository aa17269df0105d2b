"""The cost ledger as the report shows it: equivalent full-system runs, LLM calls and cache hits
per phase, each phase split by component where the run store kept the cost account."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coalign.costs import PHASES, CostAccount, equivalent_runs
from coalign.store import RunStore


@dataclass(frozen=True)
class CostRow:
    phase: str
    runs: float
    llm_calls: int
    cache_hits: int | None = None  # ledgers recorded before cache hits were counted
    # equivalent runs of each component within the phase (empty: no cost account recorded)
    components: tuple[tuple[str, float], ...] = ()


# Table 11 order; other phases (e.g. local_search) follow alphabetically.
def _phase_key(phase: str) -> tuple[int, str]:
    return (PHASES.index(phase) if phase in PHASES else len(PHASES), phase)


def cost_rows(runs: Mapping[str, float], calls: Mapping[str, int],
              hits: Mapping[str, int] | None = None,
              account: CostAccount | None = None) -> tuple[CostRow, ...]:
    return tuple(CostRow(p, float(runs[p]), int(calls.get(p, 0)),
                         None if hits is None else int(hits.get(p, 0)), _split(account, p))
                 for p in sorted(runs, key=_phase_key))


def _split(account: CostAccount | None, phase: str) -> tuple[tuple[str, float], ...]:
    """A phase's equivalent runs per component, with the equal shares the ledger uses."""
    if account is None or phase not in account.executed:
        return ()
    shares = account.shares()
    return tuple((c, equivalent_runs({c: n}, shares))
                 for c, n in sorted(account.executed[phase].items()) if n)


def read_account(raw: Any) -> CostAccount | None:
    try:
        return CostAccount.from_json(raw) if isinstance(raw, Mapping) else None
    except (KeyError, TypeError, ValueError, AttributeError):  # a malformed account: no split
        return None


def ledger_costs(steps: Sequence[tuple[int, str, dict]],
           store: RunStore) -> tuple[tuple[CostRow, ...], str]:
    if steps and isinstance(steps[-1][2].get("ledger"), Mapping):
        ledger = steps[-1][2]["ledger"]
        hits = ledger.get("cache_hits")
        return (cost_rows(ledger.get("runs", {}), ledger.get("llm_calls", {}),
                          hits if isinstance(hits, Mapping) else None,
                          read_account(steps[-1][2].get("account"))),
                f"ledger after step {steps[-1][0]}")
    account = read_account(store.get_meta("stage1_account"))
    if account is not None:  # killed after LRF training, before any step
        usage = {p: account.total_usage(p) for p in sorted(account.executed)}
        return (cost_rows({p: account.equivalent_runs(p) for p in usage},
                          {p: u.calls for p, u in usage.items()},
                          {p: u.cache_hits for p, u in usage.items()}, account),
                "stage 1 only (no optimizer step recorded)")
    return (), "none"

