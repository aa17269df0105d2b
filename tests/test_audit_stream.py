"""Streaming: JSONL reading, duplicate detection across spills, and the real HH-RLHF sample."""

from __future__ import annotations

import json

import pytest

from coalign.audit import (
    AuditError,
    PreferenceAuditor,
    audit_jsonl,
    audit_preferences,
    hh_pair,
    iter_hh_pairs,
    iter_pairs_jsonl,
    load_contract,
    write_pairs_jsonl,
)
from tests.test_audit_support import EXAMPLES, fixture_contract, fixture_pairs, make_pair

HH_SAMPLE = "hh_rlhf/harmless_base_test_sample499_pairs.jsonl"


def test_duplicates_are_found_across_spills() -> None:
    contract = fixture_contract()
    auditor = PreferenceAuditor(contract, buffer_entries=3)  # forces many spills
    sides = ("left", "right")
    for i in range(40):
        auditor.add(make_pair(contract, i, side=sides[i % 2]))
    auditor.add(make_pair(contract, 41, side="right", prompt_id="q7", prompt="prompt 7"))
    auditor.add(make_pair(contract, 42, prompt="prompt 3"))
    report = auditor.finish()
    found = {f.code: f.message for f in report.findings}
    assert set(found) == {"duplicate_prompt_id", "repeated_prompt_text"}
    assert "rows 8,41" in found["duplicate_prompt_id"]
    assert "rows 4,42" in found["repeated_prompt_text"]


def test_write_then_stream_round_trip(tmp_path) -> None:
    contract = fixture_contract()
    pairs = [make_pair(contract, i, side=("left", "right")[i % 2]) for i in range(25)]
    path = tmp_path / "pairs.jsonl"
    assert write_pairs_jsonl(path, pairs) == 25
    streamed = [pair for _, pair in iter_pairs_jsonl(path, contract.scope)]
    assert streamed == pairs
    assert audit_jsonl(contract, path) == audit_preferences(contract, pairs)


def test_blank_lines_are_skipped_and_rows_keep_file_line_numbers(tmp_path) -> None:
    rows = [json.dumps(p.to_json()) for p in fixture_pairs()]
    path = tmp_path / "pairs.jsonl"
    path.write_text(f"\n{rows[0]}\n\n{rows[1]}\n")
    assert [line for line, _ in iter_pairs_jsonl(path, fixture_contract().scope)] == [2, 4]


@pytest.mark.parametrize(("content", "message"), [
    (b'{"pair_id": \n', r"pairs\.jsonl:1: invalid JSON"),
    (b"\xff\xfe\n", r"pairs\.jsonl:1: not UTF-8"),
    (b"[1, 2]\n", r"pairs\.jsonl:1: pair: must be a JSON object"),
    (b'{"pair_id": "x", "extra": 1}\n', r"pairs\.jsonl:1: .*unknown field\(s\) extra"),
])
def test_malformed_lines_name_file_and_line(tmp_path, content: bytes, message: str) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(content)
    with pytest.raises(AuditError, match=message):
        audit_jsonl(fixture_contract(), path)


def test_missing_field_is_named(tmp_path) -> None:
    row = fixture_pairs()[0].to_json()
    del row["prompt_id"]
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(AuditError, match=r"pairs\.jsonl:1: .*missing field prompt_id"):
        audit_jsonl(fixture_contract(), path)


def test_empty_file_gets_no_report(tmp_path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n")
    with pytest.raises(AuditError, match="no pairs"):
        audit_jsonl(fixture_contract(), path)


def test_contract_file_errors_name_the_field(tmp_path) -> None:
    record = json.loads((EXAMPLES / "fixture_contract.json").read_text())
    record["thresholds"]["min_pairz"] = 3
    path = tmp_path / "c.json"
    path.write_text(json.dumps(record))
    with pytest.raises(AuditError, match=r"c\.json: contract\.thresholds: unknown.*min_pairz"):
        load_contract(path)
    del record["thresholds"]["min_pairz"]
    del record["scope"]["heldout_split"]
    path.write_text(json.dumps(record))
    with pytest.raises(AuditError, match=r"contract\.scope: missing field\(s\) heldout_split"):
        load_contract(path)


# -- HH-RLHF ---------------------------------------------------------------------------------

def test_hh_rows_become_pairs_without_invented_votes() -> None:
    contract = load_contract(EXAMPLES / "hh_rlhf_contract.json")
    pair = hh_pair({"source_line": 7, "prompt": "\n\nHuman: hi\n\nAssistant:",
                    "chosen": " Hello.", "rejected": " Go away."}, contract.scope)
    assert pair.rater_labels == ()
    assert pair.chosen_position == "unknown"
    assert pair.policy_chosen_logp is None and not pair.has_logprobs
    assert pair.pair_id == "hh-line-7" and pair.prompt_id.startswith("hh-prompt-")


def test_real_hh_sample_reports_missing_support(shared_data) -> None:
    contract = load_contract(EXAMPLES / "hh_rlhf_contract.json")
    report = audit_jsonl(contract, shared_data / HH_SAMPLE, reader=iter_hh_pairs)
    assert report.pairs == 499
    assert (report.decisive, report.ties, report.abstentions) == (0, 0, 0)
    assert report.chosen_votes == 0 and report.mean_dpo_loss is None
    assert report.status == "BLOCKED"
    found = {f.code: f for f in report.findings}
    assert {"insufficient_decisive_support", "no_decisive_judgment",
            "presentation_unrecorded"} <= set(found)
    assert "499 pair(s)" in found["no_decisive_judgment"].message
    assert "mean_dpo_loss=not_supplied" in report.to_lines()


def test_hh_file_read_as_audit_format_is_refused(shared_data) -> None:
    contract = load_contract(EXAMPLES / "hh_rlhf_contract.json")
    with pytest.raises(AuditError, match=r"sample499_pairs\.jsonl:1: .*unknown field"):
        audit_jsonl(contract, shared_data / HH_SAMPLE)


def test_spill_files_are_removed_when_a_stream_fails_midway(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    contract = fixture_contract()
    good = [make_pair(contract, i, side=("left", "right")[i % 2]) for i in range(10)]
    with pytest.raises(AuditError, match="expected a PreferencePair"):
        with PreferenceAuditor(contract, buffer_entries=2) as auditor:
            for pair in good:
                auditor.add(pair)
            assert list(tmp_path.glob("coalign-audit-dedup-*"))  # spilled to disk by now
            auditor.add("not a pair")  # type: ignore[arg-type]
    assert list(tmp_path.glob("coalign-audit-dedup-*")) == []
