"""``audit_preferences`` checks lists of pairs in chunks; outcomes match ``add`` pair by pair.

``PairChecker`` accepts a chunk only when ``rebuild`` would accept every pair in it unchanged;
any tampered, bypassed or non-canonical record sends its chunk back to ``add``. The reference
here is ``audit_stream`` over an iterator, which always adds pair by pair.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coalign.audit import (
    AuditError,
    AuditScope,
    PreferenceAuditor,
    PreferencePair,
    audit_preferences,
    audit_stream,
)
from coalign.audit._digest import record_digest
from coalign.audit._pair import LOGPROB_FIELDS
from tests.test_audit_properties import CONTRACT, pair_fields
from tests.test_audit_support import fixture_contract, make_pair


def outcome(run, *args) -> object:
    try:
        return run(*args)
    except AuditError as exc:
        return f"error: {exc}"


def assert_same(contract, pairs: list) -> object:
    expected = outcome(audit_stream, contract, iter(pairs))  # pair by pair
    assert outcome(audit_preferences, contract, pairs) == expected
    return expected


def good(count: int = 600) -> list[PreferencePair]:
    sides = ("left", "right")
    return [make_pair(CONTRACT, i, side=sides[i % 2], policy_chosen_logp=-1.0 - i / 9,
                      labels=(("r1", "chosen"), ("r2", "chosen"), ("r3", "tie")))
            for i in range(count)]


def tampered(pair: PreferencePair, field: str, value: object) -> PreferencePair:
    copy = dataclasses.replace(pair)
    object.__setattr__(copy, field, value)
    return copy


def redigested(pair: PreferencePair, field: str, value: object) -> PreferencePair:
    """``tampered``, with the digest recomputed to fit: only the field checks can object."""
    copy = tampered(pair, field, value)
    values = [getattr(copy, name) for name in ("pair_id", "prompt_id", "prompt", "chosen",
                                               "rejected", "chosen_position", "rater_labels",
                                               *LOGPROB_FIELDS)]
    object.__setattr__(copy, "digest", record_digest("PreferencePair",
                                                     [copy.scope.digest, *values]))
    return copy


def twin_scope() -> AuditScope:
    return AuditScope(**CONTRACT.scope.to_json())  # equal to the contract's, another object


def stale_twin_scope() -> AuditScope:
    scope = twin_scope()
    object.__setattr__(scope, "digest", "0" * 64)
    return scope


class Lenient(PreferencePair):
    __slots__ = ()


class Text(str):
    pass


BASE = good(1)[0]
ODD = {  # record -> does the pair-by-pair path accept it?
    "changed text": (tampered(BASE, "chosen", "other"), False),
    "labels as list": (tampered(BASE, "rater_labels", list(BASE.rater_labels)), False),
    "label as list": (tampered(BASE, "rater_labels", (["r1", "left"],)), False),
    "int logp": (tampered(BASE, "policy_chosen_logp", -2), False),
    "numpy logp": (tampered(BASE, "policy_chosen_logp", np.float64(BASE.policy_chosen_logp)),
                   False),
    "negative zero": (tampered(BASE, "policy_rejected_logp", -0.0), False),
    "empty digest": (tampered(BASE, "digest", ""), False),
    "upper digest": (tampered(BASE, "digest", BASE.digest.upper()), False),
    "str subclass id": (tampered(BASE, "pair_id", Text(BASE.pair_id)), False),
    "bad position": (redigested(BASE, "chosen_position", "LEFT"), False),
    "bad vote": (redigested(BASE, "rater_labels", (("r1", "LEFT"),)), False),
    "blank rater": (redigested(BASE, "rater_labels", (("r1 ", "left"),)), False),
    "same texts": (redigested(BASE, "rejected", BASE.chosen), False),
    "positive logp": (redigested(BASE, "policy_rejected_logp", 0.5), False),
    "changed text, new digest": (redigested(BASE, "chosen", "other"), True),
    "never built": (object.__new__(PreferencePair), False),
    "subclass": (Lenient(**{f.name: getattr(BASE, f.name)
                            for f in dataclasses.fields(BASE)}), False),
    "not a pair": (BASE.to_json(), False),
    "stale scope digest": (tampered(BASE, "scope", stale_twin_scope()), False),
    "bypassed scope": (tampered(BASE, "scope", object.__new__(AuditScope)), False),
    "equal scope object": (tampered(BASE, "scope", twin_scope()), True),
    "zero logp": (make_pair(CONTRACT, 900, policy_rejected_logp=0.0), True),
    "unknown side, tie": (make_pair(CONTRACT, 901, chosen_position="unknown",
                                    labels=(("r1", "tie"),)), True),
    "duplicate rater": (make_pair(CONTRACT, 902, labels=(("r1", "chosen"), ("r1", "chosen"))),
                        True),
}


@pytest.mark.parametrize("case", sorted(ODD))
def test_odd_records_match_pair_by_pair(case: str) -> None:
    record, valid = ODD[case]
    pairs = good()
    pairs.insert(300, record)
    result = assert_same(CONTRACT, pairs)
    assert valid == (not isinstance(result, str)), result


def test_clean_lists_are_not_added_pair_by_pair(monkeypatch) -> None:
    pairs = good()
    expected = audit_stream(CONTRACT, iter(pairs))

    def refuse(*args: object) -> None:
        raise AssertionError("added pair by pair")

    monkeypatch.setattr(PreferenceAuditor, "add", refuse)
    assert audit_preferences(CONTRACT, pairs) == expected


def test_logprobs_not_supplied() -> None:
    contract = fixture_contract(logprobs="not_supplied")
    bare = dict.fromkeys(("policy_chosen_logp", "policy_rejected_logp", "reference_chosen_logp",
                          "reference_rejected_logp"))
    pairs = [make_pair(contract, i, side=("left", "right")[i % 2], **bare) for i in range(300)]
    assert assert_same(contract, pairs).mean_dpo_loss is None
    assert "log-probs are supplied" in assert_same(contract, [*pairs, make_pair(contract, 999)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=st.lists(pair_fields(), min_size=1, max_size=8),
       odd=st.lists(st.tuples(st.integers(0, 300), st.sampled_from(sorted(ODD))), max_size=3),
       repeats=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), max_size=3))
def test_random_lists_give_identical_outcomes(fields, odd, repeats) -> None:
    pairs = good(300) + [PreferencePair(**f) for f in fields]
    for source, target in repeats:  # the same record twice: duplicate ids and prompts
        pairs[target % len(pairs)] = pairs[source % len(pairs)]
    for index, case in odd:
        pairs.insert(index, ODD[case][0])
    assert_same(CONTRACT, pairs)
