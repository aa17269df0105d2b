"""Hypothesis properties: digests see every field, losses stay finite, streaming is exact."""

from __future__ import annotations

import dataclasses
import math
import sys
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coalign.audit import (
    AuditScope,
    PreferencePair,
    audit_preferences,
    audit_stream,
    dpo_loss,
)
from coalign.audit._contract import SCOPE_FIELDS
from coalign.audit._dedup import DuplicateIndex
from coalign.audit._numbers import MAX_ABS_LOGPROB, MAX_BETA
from tests.test_audit_support import fixture_contract

CONTRACT = fixture_contract()  # frozen; loaded once instead of once per example
# Printable, no whitespace: the identifier rules (control, format, unassigned and separator
# characters are refused).
IDS = st.text(st.characters(codec="utf-8", exclude_categories=("C", "Z")), min_size=1, max_size=8)
TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=30).filter(
    lambda t: not t.isspace())
LOGP = st.floats(min_value=-MAX_ABS_LOGPROB, max_value=0.0, allow_subnormal=False).map(
    lambda x: x + 0.0)
VOTE = st.sampled_from(["left", "right", "tie", "abstain"])
LABELS = st.lists(st.tuples(IDS, VOTE), max_size=4).map(tuple)


@st.composite
def pair_fields(draw) -> dict:
    chosen = draw(TEXT)
    return dict(
        scope=CONTRACT.scope, pair_id=draw(IDS), prompt_id=draw(IDS),
        prompt=draw(TEXT), chosen=chosen, rejected=draw(TEXT.filter(lambda t: t != chosen)),
        chosen_position=draw(st.sampled_from(["left", "right"])), rater_labels=draw(LABELS),
        policy_chosen_logp=draw(LOGP), policy_rejected_logp=draw(LOGP),
        reference_chosen_logp=draw(LOGP), reference_rejected_logp=draw(LOGP))


MUTABLE = ["pair_id", "prompt_id", "prompt", "chosen", "rejected", "chosen_position",
           "rater_labels", "policy_chosen_logp", "policy_rejected_logp",
           "reference_chosen_logp", "reference_rejected_logp", "scope"]
REPLACEMENTS = {"pair_id": IDS, "prompt_id": IDS, "prompt": TEXT, "chosen": TEXT,
                "rejected": TEXT, "chosen_position": st.sampled_from(["left", "right"]),
                "rater_labels": LABELS, "policy_chosen_logp": LOGP,
                "policy_rejected_logp": LOGP, "reference_chosen_logp": LOGP,
                "reference_rejected_logp": LOGP}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=pair_fields(), field=st.sampled_from(MUTABLE), data=st.data())
def test_any_field_change_changes_the_digest(fields: dict, field: str, data) -> None:
    original = PreferencePair(**fields)
    if field == "scope":
        name = data.draw(st.sampled_from(SCOPE_FIELDS))
        value = AuditScope(**{**original.scope.to_json(), name: data.draw(
            IDS.filter(lambda v: v != getattr(original.scope, name)))})
    else:
        value = data.draw(REPLACEMENTS[field].filter(lambda v: v != fields[field]))
    changed = {**fields, field: value}
    if changed["chosen"] == changed["rejected"]:
        return  # not a valid comparison: nothing to digest
    assert PreferencePair(**changed).digest != original.digest


@settings(max_examples=200, deadline=None)
@given(fields=pair_fields())
def test_json_round_trip_keeps_the_digest(fields: dict) -> None:
    pair = PreferencePair(**fields)
    again = PreferencePair.from_json(pair.to_json(), pair.scope)
    assert again == pair and again.digest == pair.digest


@settings(max_examples=500, deadline=None)
@given(pc=LOGP, pr=LOGP, rc=LOGP, rr=LOGP,
       beta=st.floats(min_value=sys.float_info.min, max_value=MAX_BETA))
def test_loss_is_finite_over_the_valid_range(pc, pr, rc, rr, beta) -> None:
    loss = dpo_loss(pc, pr, rc, rr, beta)
    assert math.isfinite(loss) and loss >= 0.0
    margin = beta * ((pc - pr) - (rc - rr))
    if abs(margin) < 30:  # where the naive formula is safe, both agree
        assert math.isclose(loss, math.log1p(math.exp(-margin)), rel_tol=1e-12, abs_tol=1e-300)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(pair_fields(), min_size=1, max_size=6))
def test_sequence_and_stream_audits_agree(rows: list[dict]) -> None:
    pairs = [PreferencePair(**row) for row in rows]
    assert audit_preferences(CONTRACT, pairs) == audit_stream(CONTRACT, iter(pairs))


@settings(max_examples=60, deadline=None)
@given(entries=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 2)), max_size=300),
       buffer=st.integers(1, 64))
def test_spilling_duplicate_index_matches_a_counter(entries, buffer) -> None:
    # Keys spread over the whole 64-bit range so that spills use many partitions.
    spread = [(k * 0x9E3779B97F4A7C15 % 2**64, a) for k, a in entries]
    index = DuplicateIndex(buffer_entries=buffer)
    for row, (key, aux) in enumerate(spread, start=1):
        index.add(key, aux, row)
    summary = index.summarize()
    counts = Counter(key for key, _ in spread)
    auxes: dict[int, set[int]] = {}
    for key, aux in spread:
        auxes.setdefault(key, set()).add(aux)
    assert summary.groups == sum(1 for c in counts.values() if c > 1)
    assert summary.extra_rows == sum(c - 1 for c in counts.values() if c > 1)
    assert summary.conflicts == sum(1 for s in auxes.values() if len(s) > 1)
    for group in summary.examples:
        keys = {spread[row - 1][0] for row in group}
        assert len(keys) == 1 and len(group) == counts[keys.pop()]


def test_pair_replace_without_new_digest_is_stale() -> None:
    pair = PreferencePair(CONTRACT.scope, "a", "b", "p", "x", "y", "left", ())
    fresh = dataclasses.replace(pair, chosen="z", digest="")
    assert fresh.digest != pair.digest


@settings(max_examples=40, deadline=None)
@given(entries=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 1)), min_size=2,
                        max_size=200), buffer=st.integers(1, 64), salt=st.integers(1, 2**20))
def test_duplicate_examples_do_not_depend_on_fingerprint_order(entries, buffer, salt) -> None:
    # Same stream, two different key mappings (as two processes' hashes would give).
    summaries = []
    for multiplier in (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F * salt | 1):
        index = DuplicateIndex(buffer_entries=buffer, max_examples=2)
        for row, (key, aux) in enumerate(entries, start=1):
            index.add(key * multiplier % 2**64, aux, row)
        summaries.append(index.summarize())
    assert summaries[0] == summaries[1]
