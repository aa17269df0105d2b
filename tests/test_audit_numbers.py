"""Malformed numbers are refused naming the field; extreme valid margins give finite losses."""

from __future__ import annotations

import json
import math

import pytest

from coalign.audit import (
    AuditError,
    AuditThresholds,
    PreferenceContract,
    audit_jsonl,
    audit_preferences,
    dpo_loss,
)
from coalign.audit._numbers import MAX_ABS_LOGPROB, MAX_BETA
from tests.test_audit_support import fixture_contract, fixture_pairs, make_pair

LOGP_FIELDS = ["policy_chosen_logp", "policy_rejected_logp",
               "reference_chosen_logp", "reference_rejected_logp"]
BAD_LOGPS = {
    "true": (True, "must be a number"),
    "false": (False, "must be a number"),
    "nan": (float("nan"), "is NaN"),
    "+inf": (float("inf"), "is inf"),
    "-inf": (float("-inf"), "is -inf"),
    "subnormal": (-5e-324, "subnormal"),
    "subnormal-largest": (-2.2250738585072e-308, "subnormal"),
    "positive": (0.5, "is positive"),
    "positive-probability": (1.0, "is positive"),
    "oversized": (-MAX_ABS_LOGPROB * 1.5, "exceeds"),
    "huge": (-1e300, "exceeds"),
    "string": ("-2.0", "must be a number"),
    "huge-int": (-(2**80), "not exactly representable"),
}


@pytest.mark.parametrize("field", LOGP_FIELDS)
@pytest.mark.parametrize("case", sorted(BAD_LOGPS))
def test_bad_logprob_is_refused_naming_the_field(field: str, case: str) -> None:
    value, message = BAD_LOGPS[case]
    with pytest.raises(AuditError, match=rf"{field}: .*{message}|{field}: {message}"):
        make_pair(fixture_contract(), 1, **{field: value})


def test_partial_logprobs_are_refused() -> None:
    with pytest.raises(AuditError, match="reference_rejected_logp is missing"):
        make_pair(fixture_contract(), 1, reference_rejected_logp=None)


@pytest.mark.parametrize(("token", "message"), [
    ("NaN", "policy_rejected_logp: is NaN"),
    ("Infinity", "policy_rejected_logp: is inf"),
    ("-Infinity", "policy_rejected_logp: is -inf"),
    ("-1e999", "policy_rejected_logp: is -inf"),
    ("true", "policy_rejected_logp: must be a number"),
    ("0.25", "policy_rejected_logp: sequence log-probability 0.25 is positive"),
    ("-1e-320", "policy_rejected_logp: .*subnormal"),
    ("-1e7", "policy_rejected_logp: magnitude"),
])
def test_bad_numbers_in_jsonl_name_line_and_field(tmp_path, token: str, message: str) -> None:
    row = fixture_pairs()[0].to_json()
    row["policy_rejected_logp"] = "@@"
    text = json.dumps(row).replace('"@@"', token)
    path = tmp_path / "pairs.jsonl"
    path.write_text(text + "\n")
    with pytest.raises(AuditError, match=rf"pairs\.jsonl:1: pair 'pair-1': {message}"):
        audit_jsonl(fixture_contract(), path)


@pytest.mark.parametrize(("beta", "message"), [
    (True, "must be a number"), (float("nan"), "is NaN"), (float("inf"), "is inf"),
    (0.0, "must be in"), (-0.1, "must be in"), (5e-324, "subnormal"),
    (MAX_BETA * 10, "must be in"), ("0.1", "must be a number"),
])
def test_bad_beta_is_refused(beta: object, message: str) -> None:
    with pytest.raises(AuditError, match=rf"contract\.beta: .*{message}|contract\.beta: {message}"):
        PreferenceContract(scope=fixture_contract().scope, beta=beta)  # type: ignore[arg-type]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("min_pairs", True, "must be an integer"), ("min_pairs", 2.0, "must be an integer"),
    ("min_pairs", 0, "must be >= 1"), ("min_decisive_votes", -1, "must be >= 1"),
    ("max_rejected_vote_share", float("nan"), "is NaN"),
    ("max_rejected_vote_share", 1.5, "fraction"), ("max_same_side_share", False, "number"),
])
def test_bad_thresholds_are_refused(field: str, value: object, message: str) -> None:
    with pytest.raises(AuditError, match=rf"thresholds\.{field}: .*{message}"):
        AuditThresholds(**{field: value})


def test_integers_and_negative_zero_become_canonical_floats() -> None:
    pair = make_pair(fixture_contract(), 1, policy_chosen_logp=-2, reference_chosen_logp=-0.0)
    assert type(pair.policy_chosen_logp) is float
    assert math.copysign(1.0, pair.reference_chosen_logp) == 1.0
    assert pair.digest == make_pair(fixture_contract(), 1, policy_chosen_logp=-2.0,
                                    reference_chosen_logp=0.0).digest


@pytest.mark.parametrize(("logps", "beta"), [
    ((0.0, -MAX_ABS_LOGPROB, -MAX_ABS_LOGPROB, 0.0), MAX_BETA),  # margin +4e9: loss -> 0
    ((-MAX_ABS_LOGPROB, 0.0, 0.0, -MAX_ABS_LOGPROB), MAX_BETA),  # margin -4e9: loss -> 4e9
    ((-1000.0, 0.0, 0.0, -1000.0), 1.0),  # exp(2000) would overflow in the naive form
    ((0.0, -1000.0, -1000.0, 0.0), 1.0),
    ((-1e-300, -2e-300, -3e-300, -4e-300), 1e-6),  # tiny but normal values
])
def test_extreme_valid_margins_give_finite_losses(logps: tuple, beta: float) -> None:
    loss = dpo_loss(*logps, beta=beta)
    assert math.isfinite(loss) and loss >= 0.0
    contract = fixture_contract(beta=beta, thresholds=AuditThresholds(min_pairs=1))
    fields = dict(zip(LOGP_FIELDS, logps, strict=True))
    report = audit_preferences(contract, [make_pair(contract, 1, **fields)])
    assert report.mean_dpo_loss == loss
    assert math.isfinite(report.mean_dpo_loss)


def test_naive_formula_would_overflow_where_the_stable_one_does_not() -> None:
    with pytest.raises(OverflowError):
        math.log(1.0 + math.exp(2000.0))
    assert dpo_loss(-1000.0, 0.0, 0.0, -1000.0, beta=1.0) == 2000.0
