"""Cost accounting in the reference's unit: equivalent full-system runs.

One execution of component k counts as its share of one full run. With equal shares (the
reference's assumption) each of the K components is worth 1/K, so a full run is 1.0 and a
prefix-cached ``run_from`` that re-executes only the last third of a pipeline is about 1/3.
Optionally, shares follow measured tokens per execution, so expensive components weigh more.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from coalign.errors import ConfigError
from coalign.trace import Trace, Usage

# The reference's Table 11 phases, in reporting order; other phases follow alphabetically.
PHASES = ("lrf_train", "adapt", "validation")


def executions(traces: Iterable[Trace]) -> Counter[str]:
    """How many times each component actually executed (reused and skipped steps are free)."""
    counts: Counter[str] = Counter()
    for t in traces:
        for s in t.steps:
            if not s.reused and not s.skipped:
                counts[s.component] += 1
    return counts


def equal_shares(components: Sequence[str]) -> dict[str, float]:
    if not components:
        raise ConfigError("cost shares need at least one component")
    return {c: 1.0 / len(components) for c in components}


def token_shares(components: Sequence[str], usage: Mapping[str, Usage],
                 executed: Mapping[str, int]) -> dict[str, float]:
    """Shares proportional to mean tokens per execution; falls back to equal shares if no tokens."""
    per_exec = {c: (usage[c].tokens / executed[c]) if executed.get(c) and c in usage else 0.0
                for c in components}
    total = sum(per_exec.values())
    if total <= 0:
        return equal_shares(components)
    return {c: v / total for c, v in per_exec.items()}


def equivalent_runs(executed: Mapping[str, int], shares: Mapping[str, float]) -> float:
    unknown = set(executed) - set(shares)
    if unknown:
        raise ConfigError(f"no cost share for component(s) {sorted(unknown)}")
    return sum(n * shares[c] for c, n in executed.items())


@dataclass
class CostAccount:
    """Executions and LLM usage per phase (``eval``, ``lrf_train``, ``adapt``, ``validation``…)."""

    components: Sequence[str]
    executed: dict[str, Counter[str]] = field(default_factory=dict)
    usage: dict[str, dict[str, Usage]] = field(default_factory=dict)

    def add_traces(self, phase: str, traces: Iterable[Trace]) -> None:
        traces = list(traces)
        self.executed.setdefault(phase, Counter()).update(executions(traces))
        bucket = self.usage.setdefault(phase, {})
        for t in traces:
            for s in t.steps:
                if not s.reused:
                    bucket.setdefault(s.component, Usage()).add(s.usage)

    def to_json(self) -> dict:
        return {"components": list(self.components),
                "executed": {ph: dict(c) for ph, c in self.executed.items()},
                "usage": {ph: {c: u.to_json() for c, u in per.items()}
                          for ph, per in self.usage.items()}}

    @classmethod
    def from_json(cls, data: Mapping) -> CostAccount:
        return cls(list(data["components"]),
                   {ph: Counter(c) for ph, c in data["executed"].items()},
                   {ph: {c: Usage.from_json(u) for c, u in per.items()}
                    for ph, per in data["usage"].items()})

    def total_usage(self, phase: str | None = None) -> Usage:
        total = Usage()
        for ph, per_comp in self.usage.items():
            if phase is None or ph == phase:
                for u in per_comp.values():
                    total.add(u)
        return total

    def shares(self, weighting: str = "equal") -> dict[str, float]:
        if weighting == "equal":
            return equal_shares(self.components)
        if weighting == "tokens":
            executed: Counter[str] = Counter()
            usage: dict[str, Usage] = {}
            for phase, counts in self.executed.items():
                executed.update(counts)
                for c, u in self.usage.get(phase, {}).items():
                    usage.setdefault(c, Usage()).add(u)
            return token_shares(self.components, usage, executed)
        raise ConfigError(f"unknown cost weighting {weighting!r}; use 'equal' or 'tokens'")

    def equivalent_runs(self, phase: str | None = None, weighting: str = "equal") -> float:
        shares = self.shares(weighting)
        return sum(equivalent_runs(c, shares) for ph, c in self.executed.items()
                   if phase is None or ph == phase)
