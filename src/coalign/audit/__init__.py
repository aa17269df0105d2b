"""Preference-evidence audit and numerically stable DPO loss (reference: seed 003)."""

from coalign.audit._audit import PreferenceAuditor, audit_preferences, audit_stream
from coalign.audit._audit_jsonl import audit_jsonl
from coalign.audit._contract import AuditScope, AuditThresholds, PreferenceContract
from coalign.audit._errors import AuditError
from coalign.audit._hh import hh_pair, iter_hh_pairs
from coalign.audit._jsonl import (
    iter_pairs_jsonl,
    load_contract,
    write_pairs_jsonl,
    write_text_atomic,
)
from coalign.audit._loss import dpo_loss, dpo_margin, softplus
from coalign.audit._pair import PreferencePair
from coalign.audit._report import CLAIM, Finding, PreferenceReport
from coalign.audit._rollouts import rollout_pair, rollout_pairs

__all__ = [
    "CLAIM",
    "AuditError",
    "AuditScope",
    "AuditThresholds",
    "Finding",
    "PreferenceAuditor",
    "PreferenceContract",
    "PreferencePair",
    "PreferenceReport",
    "audit_jsonl",
    "audit_preferences",
    "audit_stream",
    "dpo_loss",
    "dpo_margin",
    "hh_pair",
    "iter_hh_pairs",
    "iter_pairs_jsonl",
    "load_contract",
    "rollout_pair",
    "rollout_pairs",
    "softplus",
    "write_pairs_jsonl",
    "write_text_atomic",
]
