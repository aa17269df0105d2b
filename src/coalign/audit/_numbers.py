"""Strict checks of the scalar values a contract or pair may hold.

Each check returns the canonical value or raises ``AuditError`` naming the field. Malformed
numbers are refused here, before any arithmetic, so that a non-finite loss is never the first
sign that the evidence was bad.
"""

from __future__ import annotations

import math
import sys

from coalign.audit._errors import AuditError

#: Largest accepted |sequence log-probability| in nats. A sequence of 100k tokens at -10 nats
#: per token stays inside it; anything larger is far more likely a unit or sign bug.
MAX_ABS_LOGPROB = 1e6
#: Largest accepted DPO temperature. With both bounds, every valid margin is finite.
MAX_BETA = 1e3
MIN_NORMAL = sys.float_info.min  # smallest positive normal float; below it is subnormal


def _real(value: object, where: str) -> float:
    # bool is an int subclass: True would silently become 1.0.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AuditError(f"{where}: must be a number (got {type(value).__name__} {value!r})")
    if isinstance(value, int) and abs(value) > 2**53:
        raise AuditError(f"{where}: integer {value} is not exactly representable as a float")
    number = float(value)
    if math.isnan(number):
        raise AuditError(f"{where}: is NaN; supply a finite value")
    if math.isinf(number):
        raise AuditError(f"{where}: is {number}; supply a finite value")
    if number != 0.0 and abs(number) < MIN_NORMAL:
        raise AuditError(f"{where}: {number!r} is subnormal; round it to 0 or fix its source")
    return number + 0.0  # folds -0.0 into 0.0 so equal values share one digest


def check_logprob(value: object, where: str) -> float:
    """A supplied sequence log-probability: finite, normal, <= 0 and at most 1e6 nats in size."""
    number = _real(value, where)
    if number > 0.0:
        raise AuditError(
            f"{where}: sequence log-probability {number!r} is positive; it must be <= 0 "
            "(pass log p, not p or -log p)"
        )
    if -number > MAX_ABS_LOGPROB:
        raise AuditError(
            f"{where}: magnitude {-number!r} exceeds {MAX_ABS_LOGPROB:g} nats; check units and sign"
        )
    return number


def check_beta(value: object, where: str) -> float:
    """The DPO temperature: a normal float in (0, 1e3]."""
    number = _real(value, where)
    if not 0.0 < number <= MAX_BETA:
        raise AuditError(f"{where}: must be in (0, {MAX_BETA:g}] (got {number!r})")
    return number


def check_share(value: object, where: str) -> float:
    """A fraction threshold in [0, 1]."""
    number = _real(value, where)
    if not 0.0 <= number <= 1.0:
        raise AuditError(f"{where}: must be a fraction in [0, 1] (got {number!r})")
    return number


def check_count(value: object, where: str, minimum: int = 0) -> int:
    """A non-negative integer threshold; floats and booleans are refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise AuditError(f"{where}: must be an integer (got {type(value).__name__} {value!r})")
    if value < minimum:
        raise AuditError(f"{where}: must be >= {minimum} (got {value})")
    return value


def check_identifier(value: object, where: str) -> str:
    """An id or revision: a non-empty string without surrounding whitespace or control chars."""
    if type(value) is not str:
        raise AuditError(f"{where}: must be a string (got {type(value).__name__} {value!r})")
    if not value or value != value.strip():
        raise AuditError(f"{where}: must be non-empty without leading/trailing spaces ({value!r})")
    if not value.isprintable():
        raise AuditError(f"{where}: contains control characters ({value!r})")
    return value


def check_text(value: object, where: str, blank_ok: bool = False) -> str:
    """Exact prompt or response text, kept byte for byte.

    An empty string is refused (it usually means a missing field). A whitespace-only text is
    refused for prompts but allowed for responses when ``blank_ok``: saying nothing can be the
    candidate raters actually compared (HH-RLHF has such a chosen response).
    """
    if type(value) is not str:
        raise AuditError(f"{where}: must be a string (got {type(value).__name__})")
    if not value or (not blank_ok and not value.strip()):
        raise AuditError(f"{where}: is empty; the exact text shown to raters is required")
    return value
