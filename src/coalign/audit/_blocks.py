"""The audit's fast path: validate a block of records column by column, not record by record.

The per-record path builds (or rebuilds) a frozen ``PreferencePair`` for every record, which
costs several times more than the checks themselves. Here a block of records becomes columns
and every check of that path runs once per column: string methods over a joined column, numpy
over log-probabilities and votes, set comparisons for exact types, and one SHA-256 per record
over exactly the payload ``record_digest`` hashes. Two sources feed it:

* ``BlockDecoder``: JSONL lines, each decoded by msgspec straight into a typed Struct (field
  types, allowed strings and unknown fields are checked in C), for ``audit_jsonl``;
* ``PairChecker``: ``PreferencePair`` objects of a list, for ``audit_preferences``.

Only acceptance is decided here. A block holding anything the fast path does not accept
outright (a line that fails to decode, a blank line, a scope other than the contract's, a
stale digest, a log-probability outside the normal negative range, ``-0.0``, a non-canonical
value, ...) gives ``None``, and the caller handles that block record by record: errors, their
wording and their order stay those of the per-record path. A block is accepted only when
every record would pass the per-record path with the same values, so both paths feed the
auditor identical data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter, eq, itemgetter, methodcaller
from typing import Literal

import msgspec
import numpy as np
from msgspec.structs import astuple

from coalign.audit._contract import AuditScope
from coalign.audit._numbers import MAX_ABS_LOGPROB, MIN_NORMAL
from coalign.audit._pair import LOGPROB_FIELDS, PreferencePair

# Codes for the tally. An unknown position (4) never equals a vote code, as in ``_tally``.
_VOTE_CODES = {"left": 0, "right": 1, "tie": 2, "abstain": 3}
_SIDE_CODES = {"left": 0, "right": 1, "unknown": 4}
_CHOSEN, _REJECTED = 0, 1  # tally columns; ties (2) and abstentions (3) keep their vote code
_DIGEST_BYTES = methodcaller("digest")
_RATER, _VOTE = itemgetter(0), itemgetter(1)
_SIDES = frozenset(_SIDE_CODES)
_PAIR_FIELDS = attrgetter("pair_id", "prompt_id", "prompt", "chosen", "rejected",
                          "chosen_position", "rater_labels", "scope", *LOGPROB_FIELDS, "digest")


# gc=False: these records hold only strings, floats and lists of string tuples (no cycles),
# so the collector need not track the thousands made per block.
class _RowText(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A JSONL row's fields in the order ``_Digested`` needs them (JSON key order is free)."""

    pair_id: str
    prompt_id: str
    prompt: str
    chosen: str
    rejected: str
    chosen_position: Literal["left", "right", "unknown"]
    rater_labels: list[tuple[str, Literal["left", "right", "tie", "abstain"]]]
    scope: msgspec.Raw  # compared as bytes with a scope already checked field by field


class _Row(_RowText, forbid_unknown_fields=True, gc=False):
    """A row under ``logprobs: required``: JSON integers become floats, as in ``_real``."""

    policy_chosen_logp: float
    policy_rejected_logp: float
    reference_chosen_logp: float
    reference_rejected_logp: float
    digest: str = ""


class _BareRow(_RowText, forbid_unknown_fields=True, gc=False):
    """A row under ``logprobs: not_supplied``: each log-prob absent or null."""

    policy_chosen_logp: None = None
    policy_rejected_logp: None = None
    reference_chosen_logp: None = None
    reference_rejected_logp: None = None
    digest: str = ""


class _Digested(msgspec.Struct, array_like=True, tag="PreferencePair", gc=False):
    """Encodes as ``["PreferencePair", scope_digest, ...]``: the payload of ``record_digest``."""

    scope_digest: str
    pair_id: str
    prompt_id: str
    prompt: str
    chosen: str
    rejected: str
    chosen_position: str
    rater_labels: list[tuple[str, str]]
    policy_chosen_logp: float | None
    policy_rejected_logp: float | None
    reference_chosen_logp: float | None
    reference_rejected_logp: float | None


@dataclass(frozen=True, slots=True)
class RowBlock:
    """A validated block in columns: what the auditor counts, nothing more.

    ``fingerprints``: (n, 3) uint64 of pair id, prompt id and prompt text (``fingerprint``).
    ``tallies``: (n, 4) chosen, rejected, tie and abstain votes per pair.
    ``duplicate_raters``: (n,) bool, a rater id repeats within the pair.
    ``sides``: how many pairs showed the chosen text left, right or at an unknown position.
    ``logps``: (n, 4) policy/reference chosen/rejected log-probs, or None when not supplied.
    """

    first_row: int
    pair_ids: tuple[str, ...]
    fingerprints: np.ndarray
    tallies: np.ndarray
    duplicate_raters: np.ndarray
    sides: tuple[int, int, int]
    logps: np.ndarray | None


class _BlockChecks:
    """The checks both block sources share, under one contract's scope and log-prob policy."""

    def __init__(self, scope: AuditScope, with_logprobs: bool) -> None:
        self._scope = scope
        self._with_logprobs = with_logprobs
        self._encode = msgspec.json.Encoder().encode

    def _block(self, first_row: int, texts: tuple[tuple, ...], logps: list[tuple],
               stored: tuple[str, ...], empty_digest_ok: bool) -> RowBlock | None:
        """Validate a block given as columns; its values already have the field types."""
        pair_ids, prompt_ids, prompts, chosen, rejected, positions, labels = texts
        if not (_texts_ok(pair_ids, prompt_ids, prompts, chosen, rejected)
                and self._digests_ok(texts, logps, stored, empty_digest_ok)):
            return None
        tally = _tally(labels, positions)
        if tally is None:
            return None
        values = None
        if self._with_logprobs:
            values = np.array(logps, dtype=np.float64).T.copy()
            # Exactly the values check_logprob keeps unchanged: normal, negative, in range,
            # or +0.0 (-0.0 is folded there, which changes the digest; let that path do it).
            valid = (values >= -MAX_ABS_LOGPROB) & (values <= -MIN_NORMAL)
            if not (valid | ((values == 0.0) & ~np.signbit(values))).all():
                return None
        fingerprints = np.column_stack([_fingerprints(c) for c in (pair_ids, prompt_ids, prompts)])
        sides = (positions.count("left"), positions.count("right"), positions.count("unknown"))
        return RowBlock(first_row, pair_ids, fingerprints, *tally, sides, values)

    def _digests_ok(self, texts: tuple[tuple, ...], logps: list[tuple], stored: tuple[str, ...],
                    empty_ok: bool) -> bool:
        records = map(_Digested, repeat(self._scope.digest), *texts, *logps)
        digests = list(map(_DIGEST_BYTES, map(hashlib.sha256, map(self._encode, records))))
        # One hex conversion and one comparison per block: with every stored digest 64
        # characters long, equal concatenations mean every row's digest is equal.
        if set(map(len, stored)) == {64} and "".join(stored) == b"".join(digests).hex():
            return True
        # In a file, an empty digest asks for it to be computed; any other must match.
        return empty_ok and all(s == "" or s == d.hex()
                                for s, d in zip(stored, digests, strict=True))


class BlockDecoder(_BlockChecks):
    """JSONL lines of the audit format as ``RowBlock``: what ``PreferencePair.from_json`` checks."""

    def __init__(self, scope: AuditScope, with_logprobs: bool) -> None:
        super().__init__(scope, with_logprobs)
        self._decode = msgspec.json.Decoder(_Row if with_logprobs else _BareRow).decode
        self._scope_json = scope.to_json()
        self._scope_raw: msgspec.Raw | None = None  # the contract's scope as the file spells it

    def decode(self, lines: list[bytes], first_row: int) -> RowBlock | None:
        """The block's rows, or None when any row needs the per-record path."""
        try:
            # One decode per line (not one for the joined block), so no value can span lines.
            rows = list(map(self._decode, lines))
        except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError):
            return None
        *texts, scopes, pc, pr, rc, rr, stored = zip(*map(astuple, rows), strict=True)
        if not self._scope_ok(scopes):
            return None
        return self._block(first_row, tuple(texts), [pc, pr, rc, rr], stored, True)

    def _scope_ok(self, raws: tuple[msgspec.Raw, ...]) -> bool:
        # A scope spelled as seen before is the contract's; a new spelling is decoded and
        # compared with the contract's scope once, as ``from_json`` does for every row.
        if raws[0] != self._scope_raw:
            try:
                if msgspec.json.decode(raws[0]) != self._scope_json:
                    return False
            except (msgspec.MsgspecError, RecursionError):
                return False
            self._scope_raw = raws[0].copy()
        return all(map(self._scope_raw.__eq__, raws))


class PairChecker(_BlockChecks):
    """``PreferencePair`` objects as ``RowBlock``: what ``rebuild`` then ``_accept`` check.

    The rebuild demands canonical values (exact types, tuples of tuples, floats as built), a
    digest equal to the recomputed one and a scope equal to the contract's; anything else
    sends the chunk back to ``rebuild``, which explains it.
    """

    def check(self, pairs: Sequence[object], first_row: int) -> RowBlock | None:
        if set(map(type, pairs)) != {PreferencePair}:
            return None
        try:
            columns = list(zip(*map(_PAIR_FIELDS, pairs), strict=True))
        except AttributeError:  # a field never set: the constructor was bypassed
            return None
        *texts, scopes, pc, pr, rc, rr, stored = columns
        logp_type = float if self._with_logprobs else type(None)
        if not (all(set(map(type, column)) == {str} for column in (*texts[:6], stored))
                and set(texts[5]) <= _SIDES and _labels_canonical(texts[6])
                and all(set(map(type, column)) == {logp_type} for column in (pc, pr, rc, rr))
                and self._scopes_ok(scopes)):
            return None
        return self._block(first_row, tuple(texts), [pc, pr, rc, rr], stored, False)

    def _scopes_ok(self, scopes: tuple[object, ...]) -> bool:
        # Distinct scope objects are few; each must equal the contract's, digest included.
        try:
            return all(scope is self._scope or (type(scope) is AuditScope
                                                and self._scope.mismatch(scope) is None
                                                and scope.digest == self._scope.digest)
                       for scope in {id(scope): scope for scope in scopes}.values())
        except AttributeError:  # a scope field never set
            return False


def _identifiers_ok(values: Sequence[str]) -> bool:
    """``check_identifier`` over a column: non-empty, printable, no surrounding whitespace."""
    joined = "".join(values)
    if not (all(values) and joined.isprintable()):
        return False
    # Printable text holds no whitespace but U+0020, so "stripped" means no value starts or
    # ends with a space; usually there is no space at all.
    if " " not in joined:
        return True
    lines = "\n".join(values)
    return not (lines[0] == " " or lines[-1] == " " or " \n" in lines or "\n " in lines)


def _texts_ok(pair_ids: tuple[str, ...], prompt_ids: tuple[str, ...], prompts: tuple[str, ...],
              chosen: tuple[str, ...], rejected: tuple[str, ...]) -> bool:
    return (_identifiers_ok(pair_ids) and _identifiers_ok(prompt_ids)
            and all(prompts) and not any(map(str.isspace, prompts))
            and all(chosen) and all(rejected) and not any(map(eq, chosen, rejected)))


def _labels_canonical(labels: tuple[object, ...]) -> bool:
    """Tuples of ``(str, vote)`` tuples, as ``PreferencePair`` stores them."""
    if set(map(type, labels)) != {tuple}:
        return False
    flat = list(chain.from_iterable(labels))  # type: ignore[call-overload]
    if not flat:
        return True
    if set(map(type, flat)) != {tuple} or set(map(len, flat)) != {2}:
        return False
    votes = list(map(_VOTE, flat))
    return (set(map(type, map(_RATER, flat))) == {str} and set(map(type, votes)) == {str}
            and set(votes) <= _VOTE_CODES.keys())


def _tally(labels: tuple[list[tuple[str, str]], ...], positions: tuple[str, ...]
           ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-pair (chosen, rejected, tie, abstain) counts and duplicate-rater flags, or None."""
    n = len(labels)
    by_rater = list(map(dict, labels))  # per pair: its distinct rater ids
    if not _identifiers_ok(list(set().union(*by_rater))):  # each distinct id checked once
        return None
    sizes = np.fromiter(map(len, labels), dtype=np.int64, count=n)
    distinct = np.fromiter(map(len, by_rater), dtype=np.int64, count=n)
    votes = np.fromiter(map(_VOTE_CODES.__getitem__, map(_VOTE, chain.from_iterable(labels))),
                        dtype=np.int64, count=int(sizes.sum()))
    sides = np.fromiter(map(_SIDE_CODES.__getitem__, positions), dtype=np.int64, count=n)
    owner = np.repeat(np.arange(n), sizes)
    shown = sides[owner]
    if ((shown == _SIDE_CODES["unknown"]) & (votes <= 1)).any():
        return None  # left/right votes without a position: the per-record path explains it
    category = np.where(votes == shown, _CHOSEN, np.where(votes <= 1, _REJECTED, votes))
    tallies = np.bincount(owner * 4 + category, minlength=4 * n).reshape(n, 4)
    return tallies, distinct != sizes


def _fingerprints(values: tuple[str, ...]) -> np.ndarray:
    # Same bits as ``fingerprint``: hash() is a signed 64-bit int, masking = viewing unsigned.
    return np.fromiter(map(hash, values), dtype=np.int64, count=len(values)).view(np.uint64)
