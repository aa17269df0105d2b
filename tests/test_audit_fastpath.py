"""The bulk JSONL path gives exactly the per-record path's reports and errors.

``audit_jsonl`` decodes blocks of lines in bulk (``_blocks``) and re-reads a block record by
record when anything in it is unusual. These tests run both paths over the same files, with
tiny blocks and buffers so that fallbacks, block edges and loss chunks meet in odd places.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coalign.audit import (
    AuditError,
    AuditThresholds,
    PreferenceAuditor,
    PreferencePair,
    audit_jsonl,
    iter_pairs_jsonl,
)
from coalign.audit._audit_jsonl import _audit_blocks
from coalign.audit._blocks import BlockDecoder, _Digested, _identifiers_ok
from coalign.audit._jsonl import iter_line_blocks
from coalign.audit._numbers import check_identifier
from coalign.audit._pair import LOGPROB_FIELDS
from tests.test_audit_properties import CONTRACT, IDS, pair_fields
from tests.test_audit_support import fixture_contract, make_pair

BARE = fixture_contract(logprobs="not_supplied")


def fast(contract, path: Path, block_bytes: int, buffer: int) -> object:
    """The bulk path (what ``audit_jsonl`` runs), as a report or the error message."""
    try:
        with PreferenceAuditor(contract, buffer_entries=buffer) as auditor:
            _audit_blocks(auditor, path, block_bytes)
            return auditor.finish()
    except AuditError as exc:
        return f"error: {exc}"


def slow(contract, path: Path, buffer: int) -> object:
    """The per-record path: every row becomes a ``PreferencePair``."""
    try:
        with PreferenceAuditor(contract, buffer_entries=buffer) as auditor:
            for line, pair in iter_pairs_jsonl(path, contract.scope):
                auditor._accept(pair, line)
            return auditor.finish()
    except AuditError as exc:
        return f"error: {exc}"


def assert_same(contract, path: Path, block_bytes: int = 700, buffer: int = 3) -> object:
    expected = slow(contract, path, buffer)
    assert fast(contract, path, block_bytes, buffer) == expected
    assert fast(contract, path, 1 << 20, 1 << 16) == slow(contract, path, 1 << 16)
    return expected


def row(index: int, contract=CONTRACT, **changes: object) -> dict:
    """A valid row (digest left empty) with ``changes`` applied."""
    supplied = contract.logprobs == "required"
    pair = make_pair(contract, index, side=("left", "right")[index % 2],
                     labels=(("r1", "chosen"), ("r2", "chosen"), ("r3", "tie")),
                     **({} if supplied else dict.fromkeys(LOGPROB_FIELDS)))
    record = {**pair.to_json(), "digest": ""}
    if supplied:
        record["policy_chosen_logp"] = -1.0 - index / 7  # varied losses
    return {**record, **changes}


def digested(record: dict, contract=CONTRACT) -> dict:
    """``record`` with its correct digest (computed by the constructor)."""
    return {**record, "digest": PreferencePair.from_json({**record, "digest": ""},
                                                         contract.scope).digest}


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def dumps(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False)


GOOD = [dumps(digested(row(i))) for i in range(12)]

# Each entry: a line that must send its block to the per-record path. Some are valid (the
# report must still match), most are errors (the message must match).
UNUSUAL = {
    "stale digest": dumps({**digested(row(50)), "chosen": "changed"}),
    "upper-case digest": dumps({**digested(row(51)),
                                "digest": digested(row(51))["digest"].upper()}),
    "nan": dumps(row(52, policy_chosen_logp="@@")).replace('"@@"', "NaN"),
    "infinity": dumps(row(53, policy_rejected_logp="@@")).replace('"@@"', "-Infinity"),
    "overflow": dumps(row(54, policy_rejected_logp="@@")).replace('"@@"', "-1e999"),
    "bool": dumps(row(55, reference_chosen_logp=True)),
    "string number": dumps(row(56, reference_chosen_logp="-2.0")),
    "positive": dumps(row(57, reference_rejected_logp=0.25)),
    "subnormal": dumps(row(58, reference_rejected_logp=-1e-320)),
    "oversized": dumps(row(59, policy_rejected_logp=-1e7)),
    "huge int": dumps(row(60, policy_rejected_logp=-(2**80))),
    "negative zero (valid)": dumps(digested(row(61, policy_rejected_logp=0.0))).replace(
        '"policy_rejected_logp": 0.0', '"policy_rejected_logp": -0.0'),
    "int logp (valid)": dumps(digested(row(62, policy_rejected_logp=-3))),
    "null logp": dumps(row(63, policy_rejected_logp=None)),
    "missing field": dumps({k: v for k, v in row(64).items() if k != "prompt_id"}),
    "unknown field": dumps({**row(65), "note": 1}),
    "labels object": dumps(row(66, rater_labels={"r1": "left"})),
    "label triple": dumps(row(67, rater_labels=[["r1", "left", "x"]])),
    "bad vote": dumps(row(68, rater_labels=[["r1", "LEFT"]])),
    "rater trailing space": dumps(row(69, rater_labels=[["r1 ", "left"]])),
    "empty rater": dumps(row(70, rater_labels=[["", "left"]])),
    "duplicate rater (valid)": dumps(row(71, rater_labels=[["r1", "right"], ["r1", "right"]])),
    "control in pair id": dumps(row(72, pair_id="p\t72")),
    "space around prompt id": dumps(row(73, prompt_id=" q73")),
    "blank prompt": dumps(row(74, prompt=" \n ")),
    "same texts": dumps(row(75, rejected="good answer 75")),
    "empty chosen": dumps(row(76, chosen="")),
    "blank chosen (valid)": dumps(row(77, chosen=" ")),
    "unknown side, ties (valid)": dumps(row(78, chosen_position="unknown",
                                              rater_labels=[["r1", "tie"]])),
    "unknown side, left vote": dumps(row(79, chosen_position="unknown")),
    "foreign scope": dumps(row(80, scope={**CONTRACT.scope.to_json(),
                                          "annotator_policy": "rubric-v0"})),
    "reordered scope (valid)": dumps(row(81, scope=dict(sorted(CONTRACT.scope.to_json().items())))),
    "scope with extra key": dumps(row(82, scope={**CONTRACT.scope.to_json(), "x": "y"})),
    "duplicate key (valid)": dumps(row(83)).replace('"chosen": ', '"chosen": "1st", "chosen": ',
                                                     1),
    "invalid json": '{"pair_id": ',
    "json array": "[1, 2]",
    "two rows on a line": dumps(row(84)) + " " + dumps(row(85)),
    "blank line (valid)": "   ",
    "escaped text (valid)": dumps(digested(row(86, chosen="caf\u00e9 \u2028 \"q\""))).replace(
        "caf\u00e9", "caf\\u00e9"),
}


# Valid rows the bulk path accepts itself; every other unusual line sends its block back.
BULK_ACCEPTS = {"int logp (valid)", "duplicate rater (valid)", "blank chosen (valid)",
                "unknown side, ties (valid)", "duplicate key (valid)", "escaped text (valid)"}


@pytest.mark.parametrize("case", sorted(UNUSUAL))
def test_unusual_lines_fall_back_and_match_the_per_record_path(tmp_path, case: str) -> None:
    path = write(tmp_path / "pairs.jsonl", [*GOOD[:5], UNUSUAL[case], *GOOD[5:]])
    decoder = BlockDecoder(CONTRACT.scope, with_logprobs=True)
    block = decoder.decode(path.read_bytes().splitlines(keepends=True), 1)
    assert (block is None) == (case not in BULK_ACCEPTS)
    outcome = assert_same(CONTRACT, path)
    assert ("(valid)" in case) == (not isinstance(outcome, str)), outcome


def test_clean_blocks_take_the_fast_path(tmp_path) -> None:
    path = write(tmp_path / "pairs.jsonl", GOOD)
    decoder = BlockDecoder(CONTRACT.scope, with_logprobs=True)
    blocks = [decoder.decode(lines, first) for first, lines in iter_line_blocks(path, 900)]
    assert len(blocks) > 3 and all(block is not None for block in blocks)
    assert assert_same(CONTRACT, path).status == "SUPPORTED"


def test_a_value_split_across_lines_is_refused_like_before(tmp_path) -> None:
    # Joined into one array these lines would parse as two rows; read per line they are not.
    first, second = dumps(digested(row(1))), dumps(digested(row(2)))
    cut = first.index('"rater_labels": [') + len('"rater_labels": [')
    path = write(tmp_path / "pairs.jsonl", [first[:cut], first[cut:] + ", " + second])
    assert assert_same(CONTRACT, path).startswith("error: ")


def test_digests_of_the_wrong_length_cannot_compensate(tmp_path) -> None:
    a, b = digested(row(1)), digested(row(2))
    a_digest, b_digest = a["digest"], b["digest"]
    a["digest"], b["digest"] = a_digest[:63], a_digest[63] + b_digest
    path = write(tmp_path / "pairs.jsonl", [dumps(a), dumps(b)])
    assert "stale digest" in assert_same(CONTRACT, path)


def test_logprobs_not_supplied_rows_match(tmp_path) -> None:
    rows = [digested(row(i, BARE), BARE) for i in range(6)]
    absent = {k: v for k, v in rows[0].items() if not k.endswith("_logp")}
    lines = [dumps(r) for r in rows] + [dumps({**absent, "pair_id": "p99", "digest": ""})]
    report = assert_same(BARE, write(tmp_path / "pairs.jsonl", lines))
    assert report.mean_dpo_loss is None and report.pairs == 7
    supplied = write(tmp_path / "mixed.jsonl", [*lines, GOOD[0]])
    assert "log-probs are supplied" in assert_same(BARE, supplied)


def test_audit_jsonl_builds_no_pair_for_clean_rows(tmp_path, monkeypatch) -> None:
    path = write(tmp_path / "pairs.jsonl", GOOD)
    expected = slow(CONTRACT, path, 1 << 16)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the per-record path ran")

    monkeypatch.setattr(PreferencePair, "from_json", refuse)
    assert audit_jsonl(CONTRACT, path) == expected


def test_invalid_utf8_inside_a_string_is_an_audit_error(tmp_path) -> None:
    # msgspec raises UnicodeDecodeError here, not a decode error: it must still become the
    # one-line "not UTF-8" error instead of escaping as a traceback.
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(GOOD[0].encode() + b"\n" + GOOD[1].replace("good", "g\udcffood")
                     .encode("utf-8", "surrogateescape") + b"\n")
    assert "pairs.jsonl:2: not UTF-8 text" in assert_same(CONTRACT, path)


def test_losses_are_summed_in_the_same_chunks(tmp_path) -> None:
    # One loss of 2e9 next to losses of 3e-7 (below its ulp): where the chunks of the running
    # sum fall changes its last bits, so both paths must cut them at the same pairs.
    contract = fixture_contract(beta=1000.0, thresholds=AuditThresholds(min_pairs=1))
    huge = dict(policy_chosen_logp=-1e6, policy_rejected_logp=0.0, reference_chosen_logp=0.0,
                reference_rejected_logp=-1e6)
    tiny = dict(policy_chosen_logp=-1.0, policy_rejected_logp=-1.015,
                reference_chosen_logp=-1.0, reference_rejected_logp=-1.0)
    lines = [dumps(row(i, contract, **(huge if i % 7 == 0 else tiny))) for i in range(40)]
    path = write(tmp_path / "pairs.jsonl", lines)
    for block_bytes, buffer in ((700, 3), (2500, 4), (400, 5), (1 << 20, 6)):
        assert fast(contract, path, block_bytes, buffer) == slow(contract, path, buffer)


def test_crlf_and_missing_final_newline(tmp_path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(("\r\n".join(GOOD)).encode())
    assert assert_same(CONTRACT, path).pairs == len(GOOD)


def test_digest_payload_is_the_record_digest() -> None:
    pair = make_pair(CONTRACT, 1, chosen="caf\u00e9 \"x\"\n", policy_chosen_logp=-2)
    record = _Digested(pair.scope.digest, pair.pair_id, pair.prompt_id, pair.prompt, pair.chosen,
                       pair.rejected, pair.chosen_position, list(pair.rater_labels),
                       pair.policy_chosen_logp, pair.policy_rejected_logp,
                       pair.reference_chosen_logp, pair.reference_rejected_logp)
    assert hashlib.sha256(msgspec.json.encode(record)).hexdigest() == pair.digest


def test_printable_whitespace_is_only_the_space() -> None:
    # ``_identifiers_ok`` relies on this: a printable id can only be unstripped by U+0020.
    found = [c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace() and c.isprintable()]
    assert found == [" "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(IDS, st.text(max_size=6)), min_size=1, max_size=5))
def test_bulk_identifier_check_agrees_with_check_identifier(values: list[str]) -> None:
    def valid(value: str) -> bool:
        try:
            check_identifier(value, "x")
        except AuditError:
            return False
        return True

    assert _identifiers_ok(values) == all(map(valid, values))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(records=st.lists(st.one_of(pair_fields(), st.sampled_from(sorted(UNUSUAL))), min_size=1,
                        max_size=14),
       repeats=st.lists(st.tuples(st.integers(0, 13), st.integers(0, 13)), max_size=3),
       block_bytes=st.integers(1, 4000), buffer=st.integers(1, 5))
def test_random_files_give_identical_outcomes(tmp_path_factory, records, repeats, block_bytes,
                                              buffer) -> None:
    lines = [UNUSUAL[r] if isinstance(r, str) else dumps(PreferencePair(**r).to_json())
             for r in records]
    for source, target in repeats:  # duplicated rows: same pair id, prompt id or text
        if source < len(lines) and target < len(lines):
            lines[target] = lines[source]
    path = write(tmp_path_factory.mktemp("fast") / "pairs.jsonl", lines)
    expected = slow(CONTRACT, path, buffer)
    assert fast(CONTRACT, path, block_bytes, buffer) == expected
