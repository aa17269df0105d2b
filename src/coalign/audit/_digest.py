"""Content digests of audit records and fingerprints for duplicate detection.

A digest is SHA-256 over the compact UTF-8 JSON array ``[tag, *values]`` with the values in a
fixed field order: the array keeps field boundaries unambiguous and avoids sorting keys on
every pair. Floats are written in shortest round-trip form, so they are digested exactly.
Values must already be validated (finite floats, strings without lone surrogates).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import msgspec

from coalign.audit._errors import AuditError

_ENCODER = msgspec.json.Encoder()
_MASK64 = (1 << 64) - 1


def record_digest(tag: str, values: Sequence[object]) -> str:
    """Hex SHA-256 of ``[tag, *values]`` in compact JSON."""
    try:
        payload = _ENCODER.encode([tag, *values])
    except UnicodeEncodeError as exc:
        raise AuditError(f"{tag}: text holds an unpaired surrogate ({exc.reason})") from None
    return hashlib.sha256(payload).hexdigest()


def fingerprint(text: str) -> int:
    """A 64-bit fingerprint of ``text``, valid within one process only.

    Python's keyed string hash (SipHash, cached on the string) is used because duplicate
    detection never leaves the process that computed it. Two different texts collide with
    probability about n^2 / 2^65 over n texts (3e-6 at ten million).
    """
    return hash(text) & _MASK64
