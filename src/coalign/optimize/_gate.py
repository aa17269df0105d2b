"""The validation gate: strict improvement of summed reward, optionally with paired bootstrap."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coalign.errors import ConfigError
from coalign.stats import paired_bootstrap


@dataclass(frozen=True)
class Gate:
    """``strict``: accept iff the summed validation reward is strictly higher (the reference).

    ``bootstrap``: additionally require P(paired mean difference > 0) ≥ ``confidence``, so a
    small validation set does not accept noise.
    """

    kind: str = "strict"
    confidence: float = 0.9
    seed: int = 0
    # > 0: stop validating a candidate once it is worse on the inputs so far with this bootstrap
    # confidence (checked every ``early_chunk`` inputs): most candidates are rejected, and with a
    # large validation set their full validation is the loop's main cost. 0: validate fully.
    early_reject: float = 0.0
    early_chunk: int = 25
    # the objective's cost cap: a candidate whose mean cost per validation query (model
    # seconds, ``Trace.cost_s``) exceeds it is refused whatever its quality; None: no cap
    cost_cap: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("strict", "bootstrap"):
            raise ConfigError(f"gate must be 'strict' or 'bootstrap', got {self.kind!r}")
        if not 0.0 <= self.early_reject < 1.0:
            raise ConfigError(f"early_reject must be in [0, 1), got {self.early_reject}")
        if self.early_chunk < 1:
            raise ConfigError(f"early_chunk must be >= 1, got {self.early_chunk}")
        if self.cost_cap is not None and not self.cost_cap > 0:
            raise ConfigError(f"cost_cap must be > 0 seconds per query, got {self.cost_cap}")

    def within_cap(self, costs: Sequence[float]) -> bool:
        """The candidate's mean cost per query on validation is within the cap (if any)."""
        return self.cost_cap is None or (bool(costs) and
                                         sum(costs) / len(costs) <= self.cost_cap + 1e-9)

    def checkpoints(self, n: int) -> list[int]:
        """Prefix lengths of an ``n``-input validation after which ``clearly_worse`` is asked;
        the last is ``n`` (no early stop left)."""
        if self.early_reject <= 0:
            return [n]
        return [*range(self.early_chunk, n, self.early_chunk), n]

    def clearly_worse(self, new: Sequence[float], old: Sequence[float]) -> bool:
        """On a validation prefix: is the candidate worse with ``early_reject`` confidence?
        It is P(paired mean difference < 0), strictly: most inputs tie, and a candidate that
        changed nothing yet (or lost one input of 25) is not stopped."""
        if self.early_reject <= 0 or not new or not sum(new) < sum(old):
            return False
        return paired_bootstrap(old, new, seed=self.seed)[3] >= self.early_reject

    def accept(self, new: Sequence[float], old: Sequence[float]) -> bool:
        if not sum(new) > sum(old):
            return False
        if self.kind == "strict":
            return True
        return paired_bootstrap(new, old, seed=self.seed)[3] >= self.confidence
