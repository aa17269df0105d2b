"""The reference fixture, reproduced exactly, and the stable DPO loss."""

from __future__ import annotations

import math

import pytest

from coalign.audit import (
    CLAIM,
    audit_jsonl,
    audit_preferences,
    dpo_loss,
    dpo_margin,
    softplus,
)
from tests.test_audit_support import FIXTURE_PAIRS, fixture_contract, fixture_pairs


def test_reference_fixture_reproduced_exactly() -> None:
    contract = fixture_contract()
    report = audit_preferences(contract, fixture_pairs(contract))
    lines = report.to_lines()
    assert "status=SUPPORTED" in lines
    assert "decisive=4;ties=2;abstentions=2" in lines
    assert "mean_dpo_loss=0.598139" in lines
    assert "claim=PREFERENCE_EVIDENCE_NOT_REWARD_OR_CAPABILITY" in lines
    assert report.findings == ()
    assert (report.chosen_votes, report.rejected_votes, report.pairs) == (4, 0, 2)


def test_fixture_shape_matches_reference_description() -> None:
    pairs = fixture_pairs()
    assert len({p.prompt_id for p in pairs}) == 2
    assert sorted(p.chosen_position for p in pairs) == ["left", "right"]
    assert all((p.policy_chosen_logp, p.policy_rejected_logp) == (-2.0, -4.0) for p in pairs)
    assert all((p.reference_chosen_logp, p.reference_rejected_logp) == (-3.0, -3.0)
               for p in pairs)
    assert fixture_contract().beta == 0.1


def test_streaming_and_sequence_audits_agree() -> None:
    contract = fixture_contract()
    assert audit_jsonl(contract, FIXTURE_PAIRS) == audit_preferences(contract, fixture_pairs())


def test_reference_margin_and_loss() -> None:
    assert dpo_margin(-2.0, -4.0, -3.0, -3.0, 0.1) == pytest.approx(0.2, abs=1e-15)
    assert dpo_loss(-2.0, -4.0, -3.0, -3.0, 0.1) == pytest.approx(math.log1p(math.exp(-0.2)))
    assert f"{dpo_loss(-2.0, -4.0, -3.0, -3.0, 0.1):.6f}" == "0.598139"


@pytest.mark.parametrize("x", [-1e9, -800.0, -30.0, -1.0, 0.0, 1e-12, 1.0, 30.0, 800.0, 1e9])
def test_softplus_is_stable_and_exact(x: float) -> None:
    value = softplus(x)
    assert math.isfinite(value)
    if abs(x) < 30:
        assert value == pytest.approx(math.log(1.0 + math.exp(x)), rel=1e-12)
    elif x > 0:
        assert value == pytest.approx(x, rel=1e-12)  # log(1+e^x) -> x
    else:
        assert 0.0 <= value < 1e-12  # log(1+e^x) -> e^x -> 0


def test_report_states_bounded_claim() -> None:
    report = audit_preferences(fixture_contract(), fixture_pairs())
    assert report.claim == CLAIM == "PREFERENCE_EVIDENCE_NOT_REWARD_OR_CAPABILITY"
    assert report.to_json()["claim"] == CLAIM


def test_public_api_is_exported() -> None:
    import coalign.audit as audit

    assert {"PreferenceContract", "PreferencePair", "audit_preferences", "audit_jsonl",
            "audit_stream", "iter_pairs_jsonl", "PreferenceAuditor"} <= set(audit.__all__)
    assert all(hasattr(audit, name) for name in audit.__all__)
    from coalign.pairs import PreferencePair as RolloutPair

    assert audit.PreferencePair is not RolloutPair  # audit records live in their own namespace
