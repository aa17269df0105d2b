"""The audit's verdict: counts, findings and the bounded claim it supports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["SUPPORTED", "FLAGGED", "BLOCKED"]
Severity = Literal["block", "flag"]
#: What a SUPPORTED report licenses: the recorded comparisons under this rubric, nothing more.
CLAIM = "PREFERENCE_EVIDENCE_NOT_REWARD_OR_CAPABILITY"


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: ``block`` findings make the evidence insufficient, ``flag`` ones suspect."""

    code: str
    severity: Severity
    message: str


@dataclass(frozen=True, slots=True)
class PreferenceReport:
    """Result of ``audit_preferences``.

    Votes are counted per (rater, pair) label: ``decisive`` = votes for either text, of which
    ``chosen_votes`` went to the chosen text; ties and abstentions are never wins.
    ``mean_dpo_loss`` is None when the contract declares log-probs as not supplied.
    """

    status: Status
    pairs: int
    decisive: int
    ties: int
    abstentions: int
    chosen_votes: int
    rejected_votes: int
    mean_dpo_loss: float | None
    max_dpo_loss: float | None
    findings: tuple[Finding, ...]
    contract_digest: str
    beta: float
    claim: str = CLAIM

    def to_lines(self) -> list[str]:
        """``key=value`` lines for terminals and logs."""
        loss = "not_supplied" if self.mean_dpo_loss is None else f"{self.mean_dpo_loss:.6f}"
        lines = [
            f"status={self.status}",
            f"pairs={self.pairs}",
            f"decisive={self.decisive};ties={self.ties};abstentions={self.abstentions}",
            f"chosen_votes={self.chosen_votes};rejected_votes={self.rejected_votes}",
            f"mean_dpo_loss={loss}",
            f"beta={self.beta!r}",
            f"findings={','.join(f.code for f in self.findings) or 'none'}",
        ]
        lines += [f"finding.{f.code}={f.severity}: {f.message}" for f in self.findings]
        lines += [f"contract_digest={self.contract_digest}", f"claim={self.claim}"]
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status, "pairs": self.pairs, "decisive": self.decisive,
            "ties": self.ties, "abstentions": self.abstentions,
            "chosen_votes": self.chosen_votes, "rejected_votes": self.rejected_votes,
            "mean_dpo_loss": self.mean_dpo_loss, "max_dpo_loss": self.max_dpo_loss,
            "beta": self.beta,
            "findings": [{"code": f.code, "severity": f.severity, "message": f.message}
                         for f in self.findings],
            "contract_digest": self.contract_digest, "claim": self.claim,
        }
