"""Attacks from the reference: each must be refused outright or visibly block/flag the report."""

from __future__ import annotations

import dataclasses

import pytest

from coalign.audit import (
    AuditError,
    AuditScope,
    PreferenceContract,
    PreferencePair,
    audit_jsonl,
    audit_preferences,
    audit_stream,
)
from tests.test_audit_support import fixture_contract, fixture_pairs, make_pair, variant


def codes(report) -> set[str]:
    return {finding.code for finding in report.findings}


# -- reversed content ---------------------------------------------------------------------

def test_reversed_content_under_old_digest_is_refused() -> None:
    pair = fixture_pairs()[0]
    with pytest.raises(AuditError, match="stale digest"):
        dataclasses.replace(pair, chosen=pair.rejected, rejected=pair.chosen)


def test_reversed_content_with_new_digest_contradicts_the_votes() -> None:
    contract = fixture_contract()
    first, second = fixture_pairs(contract)
    # Relabel: call the text raters saw on the right "chosen" (it was the rejected one).
    swapped = variant(first, chosen=first.rejected, rejected=first.chosen, chosen_position="right")
    report = audit_preferences(contract, [swapped, second])
    assert report.status == "BLOCKED"
    assert "chosen_without_majority" in codes(report)
    assert report.rejected_votes == 2  # the raters' left votes now land on the rejected text


def test_flipping_presentation_position_is_not_a_content_swap() -> None:
    contract = fixture_contract()
    first, second = fixture_pairs(contract)
    moved = variant(first, chosen_position="right")  # votes stay "left": now for rejected
    report = audit_preferences(contract, [moved, second])
    assert "chosen_without_majority" in codes(report)


# -- duplicates ------------------------------------------------------------------------------

def test_duplicate_prompt_ids_are_flagged() -> None:
    contract = fixture_contract()
    a = make_pair(contract, 1)
    b = make_pair(contract, 2, side="right", prompt_id=a.prompt_id, prompt=a.prompt)
    report = audit_preferences(contract, [a, b])
    assert report.status == "FLAGGED"
    assert codes(report) == {"duplicate_prompt_id"}


def test_prompt_id_reused_for_different_text_blocks() -> None:
    contract = fixture_contract()
    a = make_pair(contract, 1)
    b = make_pair(contract, 2, side="right", prompt_id=a.prompt_id)
    report = audit_preferences(contract, [a, b])
    assert report.status == "BLOCKED"
    assert {"prompt_id_text_conflict", "duplicate_prompt_id"} <= codes(report)


def test_repeated_prompt_text_under_new_ids_is_flagged() -> None:
    contract = fixture_contract()
    a = make_pair(contract, 1)
    b = make_pair(contract, 2, side="right", prompt=a.prompt)
    report = audit_preferences(contract, [a, b])
    assert report.status == "FLAGGED"
    assert codes(report) == {"repeated_prompt_text"}


def test_duplicate_pair_ids_block() -> None:
    contract = fixture_contract()
    a = make_pair(contract, 1)
    b = make_pair(contract, 2, side="right", pair_id=a.pair_id)
    report = audit_preferences(contract, [a, b])
    assert report.status == "BLOCKED"
    assert "duplicate_pair_id" in codes(report)


def test_same_record_submitted_twice_blocks() -> None:
    contract = fixture_contract()
    pair = fixture_pairs(contract)[0]
    report = audit_preferences(contract, [pair, pair, fixture_pairs(contract)[1]])
    assert {"duplicate_pair_id", "duplicate_prompt_id"} <= codes(report)


def test_duplicated_raters_within_a_pair_block() -> None:
    contract = fixture_contract()
    stuffed = make_pair(contract, 1, labels=(("r1", "chosen"), ("r1", "chosen"), ("r2", "tie")))
    report = audit_preferences(contract, [stuffed, make_pair(contract, 2, side="right")])
    assert report.status == "BLOCKED"
    assert "duplicate_rater" in codes(report)
    assert stuffed.rater_labels.count(("r1", "left")) == 2  # kept, not silently merged


def test_rater_labels_as_json_object_are_refused(tmp_path) -> None:
    # A JSON object would merge {"r1": "left", "r1": "left"} while parsing and hide the duplicate.
    row = fixture_pairs()[0].to_json()
    row["rater_labels"] = {"r1": "left"}
    path = tmp_path / "pairs.jsonl"
    path.write_text(__import__("json").dumps(row) + "\n")
    with pytest.raises(AuditError, match=r"pairs.jsonl:1: .*rater_labels must be a list"):
        audit_jsonl(fixture_contract(), path)


# -- scope -----------------------------------------------------------------------------------

def test_stale_annotation_policy_is_refused_naming_the_field() -> None:
    contract = fixture_contract()
    pair = fixture_pairs(contract)[0]
    old_rubric = AuditScope(**{**contract.scope.to_json(), "annotator_policy": "rubric-v0"})
    stale = variant(pair, scope=old_rubric)
    with pytest.raises(AuditError, match=r"scope\.annotator_policy is 'rubric-v0'.*rubric-v1"):
        audit_preferences(contract, [stale, fixture_pairs(contract)[1]])


def test_stale_annotation_policy_in_jsonl_is_refused(tmp_path) -> None:
    import json

    rows = [p.to_json() for p in fixture_pairs()]
    rows[1]["scope"]["annotator_policy"] = "rubric-v0"
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(AuditError, match=r"pairs.jsonl:2: .*stale digest"):  # digest covers scope
        audit_jsonl(fixture_contract(), path)
    rows[1]["digest"] = ""  # re-digested under the old rubric: the scope check names the field
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(AuditError, match=r"row 2\).*scope\.annotator_policy is 'rubric-v0'"):
        audit_jsonl(fixture_contract(), path)


@pytest.mark.parametrize("field", ["contract", "model", "reference", "policy", "data",
                                   "evaluation", "heldout_split", "source"])
def test_every_scope_revision_is_bound(field: str) -> None:
    contract = fixture_contract()
    other = AuditScope(**{**contract.scope.to_json(), field: "other-revision"})
    with pytest.raises(AuditError, match=rf"scope\.{field} is 'other-revision'"):
        audit_preferences(contract, [variant(p, scope=other) for p in fixture_pairs(contract)])


# -- support ---------------------------------------------------------------------------------

def test_zero_decisive_support_blocks() -> None:
    contract = fixture_contract()
    quiet = [make_pair(contract, i, labels=(("r1", "tie"), ("r2", "abstain"))) for i in (1, 2)]
    report = audit_preferences(contract, quiet)
    assert report.status == "BLOCKED"
    assert (report.decisive, report.ties, report.abstentions) == (0, 2, 2)
    assert {"insufficient_decisive_support", "no_decisive_judgment"} <= codes(report)


def test_one_undecided_pair_blocks_even_with_enough_total_support() -> None:
    contract = fixture_contract()
    loud = make_pair(contract, 1, labels=tuple((f"r{i}", "chosen") for i in range(5)))
    quiet = make_pair(contract, 2, side="right", labels=(("r1", "tie"),))
    report = audit_preferences(contract, [loud, quiet])
    assert codes(report) == {"no_decisive_judgment"}


def test_too_few_pairs_block() -> None:
    contract = fixture_contract()
    report = audit_preferences(contract, [make_pair(contract, 1)])
    assert "insufficient_pairs" in codes(report)
    assert report.status == "BLOCKED"


def test_tie_majority_is_not_a_win() -> None:
    contract = fixture_contract()
    labels = (("r1", "chosen"), ("r2", "rejected"), ("r3", "tie"), ("r4", "tie"))
    report = audit_preferences(contract, [make_pair(contract, 1, labels=labels),
                                          make_pair(contract, 2, side="right")])
    assert "chosen_without_majority" in codes(report)
    assert report.ties == 2


def test_rejection_disagreement_and_one_sided_layout_are_flagged() -> None:
    contract = fixture_contract()
    labels = (("r1", "chosen"), ("r2", "chosen"), ("r3", "rejected"))
    pairs = [make_pair(contract, i, side="left", labels=labels) for i in range(4)]
    report = audit_preferences(contract, pairs)
    assert report.status == "FLAGGED"
    assert codes(report) == {"rejection_disagreement", "one_sided_layout"}


def test_thresholds_are_configurable() -> None:
    strict = fixture_contract(thresholds=dataclasses.replace(
        fixture_contract().thresholds, min_decisive_votes=5))
    report = audit_preferences(strict, fixture_pairs(strict))
    assert codes(report) == {"insufficient_decisive_support"}


# -- constructor bypass and tampering -----------------------------------------------------------

def test_record_built_with_new_gets_no_report() -> None:
    contract = fixture_contract()
    ghost = object.__new__(PreferencePair)
    with pytest.raises(AuditError, match="never set"):
        audit_preferences(contract, [ghost, *fixture_pairs(contract)])


@pytest.mark.parametrize(("field", "value", "message"), [
    ("chosen", "Marseille is the capital of France.", "stale digest"),
    ("rater_labels", "as-list", "not canonical"),
    ("rater_labels", (("rater-a", "left"),), "stale digest"),
    ("policy_chosen_logp", float("nan"), "policy_chosen_logp: is NaN"),
    ("policy_chosen_logp", -2, "not canonical"),
    ("chosen_position", "LEFT", "chosen_position must be one of"),
    ("digest", "0" * 64, "stale digest"),
    ("pair_id", "pair-9", "stale digest"),
])
def test_setattr_tampering_gets_no_report(field: str, value: object, message: str) -> None:
    contract = fixture_contract()
    pair = fixture_pairs(contract)[0]
    if value == "as-list":  # same votes, non-canonical container
        value = [list(item) for item in pair.rater_labels]
    object.__setattr__(pair, field, value)
    with pytest.raises(AuditError, match=message):
        audit_preferences(contract, [pair, fixture_pairs(contract)[1]])


def test_subclass_cannot_override_checks() -> None:
    class Lenient(PreferencePair):
        __slots__ = ()

    contract = fixture_contract()
    pair = fixture_pairs(contract)[0]
    lenient = Lenient(**{f.name: getattr(pair, f.name) for f in dataclasses.fields(pair)})
    with pytest.raises(AuditError, match="expected a PreferencePair, got Lenient"):
        audit_preferences(contract, [lenient])


def test_tampered_or_bypassed_contract_gets_no_report() -> None:
    pairs = fixture_pairs()
    contract = fixture_contract()
    object.__setattr__(contract, "beta", float("inf"))
    with pytest.raises(AuditError, match="contract.beta"):
        audit_preferences(contract, pairs)
    with pytest.raises(AuditError, match="never set"):
        audit_preferences(object.__new__(PreferenceContract), pairs)
    scoped = fixture_contract()
    object.__setattr__(scoped.scope, "annotator_policy", "rubric-v2")  # digest now stale
    with pytest.raises(AuditError, match="contract.scope: field digest is not canonical"):
        audit_preferences(scoped, pairs)


def test_bypassed_scope_inside_a_pair_gets_no_report() -> None:
    contract = fixture_contract()
    pair = fixture_pairs(contract)[0]
    object.__setattr__(pair, "scope", object.__new__(AuditScope))
    with pytest.raises(AuditError, match="scope was never constructed"):
        audit_preferences(contract, [pair])


def test_changing_the_digest_makes_new_evidence_that_is_audited_again() -> None:
    contract = fixture_contract()
    first, second = fixture_pairs(contract)
    reworded = variant(first, chosen="Paris.")
    assert reworded.digest != first.digest
    assert audit_preferences(contract, [reworded, second]).status == "SUPPORTED"


# -- shape of the input -----------------------------------------------------------------------

def test_inputs_that_are_not_pair_sequences_are_refused() -> None:
    contract = fixture_contract()
    with pytest.raises(AuditError, match="expected a tuple or list"):
        audit_preferences(contract, iter(fixture_pairs(contract)))  # type: ignore[arg-type]
    with pytest.raises(AuditError, match="no pairs"):
        audit_preferences(contract, [])
    with pytest.raises(AuditError, match="expected a PreferencePair"):
        audit_stream(contract, [fixture_pairs(contract)[0].to_json()])  # type: ignore[list-item]


def test_identical_chosen_and_rejected_text_is_not_a_comparison() -> None:
    contract = fixture_contract()
    with pytest.raises(AuditError, match="identical"):
        make_pair(contract, 1, rejected="good answer 1")


def test_logprob_policy_must_match_the_contract() -> None:
    contract = fixture_contract()
    bare = make_pair(contract, 1, policy_chosen_logp=None, policy_rejected_logp=None,
                     reference_chosen_logp=None, reference_rejected_logp=None)
    with pytest.raises(AuditError, match="log-probs are missing but contract.logprobs"):
        audit_preferences(contract, [bare])
    declared = fixture_contract(logprobs="not_supplied")
    with pytest.raises(AuditError, match="log-probs are supplied but contract.logprobs"):
        audit_preferences(declared, fixture_pairs(declared))


def test_left_right_votes_need_a_recorded_position() -> None:
    contract = fixture_contract()
    with pytest.raises(AuditError, match="chosen_position is unknown"):
        make_pair(contract, 1, chosen_position="unknown")
