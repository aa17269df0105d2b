"""The declared contract an audit runs under: scope revisions, DPO temperature, thresholds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from coalign.audit._digest import record_digest
from coalign.audit._errors import AuditError
from coalign.audit._numbers import check_beta, check_count, check_identifier, check_share
from coalign.audit._rebuild import rebuild

LogprobPolicy = Literal["required", "not_supplied"]
SCOPE_FIELDS = (
    "contract", "model", "reference", "policy", "data",
    "annotator_policy", "evaluation", "heldout_split", "source",
)


@dataclass(frozen=True, slots=True)
class AuditScope:
    """Revisions every pair must share with its contract.

    ``heldout_split`` is a declared label, not evidence that no contamination exists; lineage
    and contamination checks are separate work.
    """

    contract: str
    model: str
    reference: str
    policy: str
    data: str
    annotator_policy: str
    evaluation: str
    heldout_split: str
    source: str
    digest: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        values = [check_identifier(getattr(self, n), f"scope.{n}") for n in SCOPE_FIELDS]
        object.__setattr__(self, "digest", record_digest("AuditScope", values))

    def mismatch(self, other: AuditScope) -> str | None:
        """Name of the first scope field that differs from ``other``, or None."""
        for name in SCOPE_FIELDS:
            mine, theirs = getattr(self, name), getattr(other, name)
            if type(mine) is not type(theirs) or mine != theirs:
                return name
        return None

    def to_json(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in SCOPE_FIELDS}

    @classmethod
    def from_json(cls, record: object, where: str = "scope") -> AuditScope:
        return cls(**_exact_keys(record, SCOPE_FIELDS, where))


@dataclass(frozen=True, slots=True)
class AuditThresholds:
    """When support is insufficient (blocks) or suspicious (flags).

    The defaults are small teaching values that let a two-pair fixture pass; they are not a
    sampling recommendation. Declare real ones in the contract for real data.
    """

    min_pairs: int = 2
    min_decisive_votes: int = 2
    max_rejected_vote_share: float = 0.25
    max_same_side_share: float = 0.75

    def __post_init__(self) -> None:
        for name in ("min_pairs", "min_decisive_votes"):
            value = check_count(getattr(self, name), f"thresholds.{name}", minimum=1)
            object.__setattr__(self, name, value)
        for name in ("max_rejected_vote_share", "max_same_side_share"):
            object.__setattr__(self, name, check_share(getattr(self, name), f"thresholds.{name}"))

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class PreferenceContract:
    """What is being audited and how.

    Args:
        scope: the revisions every pair must carry unchanged.
        beta: DPO temperature used for the per-pair loss.
        logprobs: "required" when every pair supplies its four sequence log-probabilities,
            "not_supplied" when the data set has none (the report then has no DPO loss).
        thresholds: support and bias limits (defaults are teaching values).
    """

    scope: AuditScope
    beta: float = 0.1
    logprobs: LogprobPolicy = "required"
    thresholds: AuditThresholds = field(default_factory=AuditThresholds)
    digest: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        # Nested records are revalidated too: a bypassed scope must not ride inside a contract.
        object.__setattr__(self, "scope", rebuild(self.scope, AuditScope, "contract.scope"))
        object.__setattr__(self, "thresholds",
                           rebuild(self.thresholds, AuditThresholds, "contract.thresholds"))
        object.__setattr__(self, "beta", check_beta(self.beta, "contract.beta"))
        if self.logprobs not in ("required", "not_supplied"):
            raise AuditError(
                f"contract.logprobs: must be 'required' or 'not_supplied' (got {self.logprobs!r})"
            )
        t = self.thresholds
        values = [self.scope.digest, self.beta, self.logprobs, t.min_pairs,
                  t.min_decisive_votes, t.max_rejected_vote_share, t.max_same_side_share]
        object.__setattr__(self, "digest", record_digest("PreferenceContract", values))

    def to_json(self) -> dict[str, Any]:
        return {"scope": self.scope.to_json(), "beta": self.beta, "logprobs": self.logprobs,
                "thresholds": self.thresholds.to_json()}

    @classmethod
    def from_json(cls, record: object, where: str = "contract") -> PreferenceContract:
        """Build from the JSON form; unknown or missing keys are refused by name."""
        keys = _exact_keys(record, ("scope", "beta", "logprobs", "thresholds"), where,
                           optional=("logprobs", "thresholds"))
        threshold_names = tuple(f.name for f in fields(AuditThresholds))
        thresholds = _exact_keys(keys.pop("thresholds", {}), threshold_names,
                                 f"{where}.thresholds", optional=threshold_names)
        return cls(scope=AuditScope.from_json(keys.pop("scope"), f"{where}.scope"),
                   thresholds=AuditThresholds(**thresholds), **keys)


def _exact_keys(record: object, names: tuple[str, ...], where: str,
                optional: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(record, Mapping):
        raise AuditError(f"{where}: must be a JSON object (got {type(record).__name__})")
    unknown = sorted(set(record) - set(names))
    if unknown:
        raise AuditError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}; "
                         f"allowed: {', '.join(names)}")
    missing = [n for n in names if n not in record and n not in optional]
    if missing:
        raise AuditError(f"{where}: missing field(s) {', '.join(missing)}")
    return dict(record)
