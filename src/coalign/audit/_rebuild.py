"""Reconstruct a frozen record from its concrete fields and prove nothing was tampered with.

Frozen dataclasses can still be bypassed (``object.__new__`` skips validation,
``object.__setattr__`` rewrites a field). The audit therefore never trusts an instance: it reads
every field, runs the constructor again and requires the fresh record to be identical in type
and canonical value to the one it was given.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import TypeVar

from coalign.audit._errors import AuditError

R = TypeVar("R")


def same_canonical(a: object, b: object) -> bool:
    """Equal in type and value, recursively; floats compare bit for bit (so -0.0 != 0.0)."""
    if a is b:  # identical objects (nested records are checked by their own owners)
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is str or kind is int:
        return a == b
    if isinstance(a, tuple):
        return len(a) == len(b) and all(map(same_canonical, a, b))  # type: ignore[arg-type]
    if is_dataclass(a):
        return all(same_canonical(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))
    if isinstance(a, float):
        return a.hex() == b.hex()  # type: ignore[union-attr]
    return a == b


def rebuild(record: object, cls: type[R], where: str) -> R:
    """Return a freshly validated copy of ``record`` or raise ``AuditError``.

    Raises when ``record`` is not exactly a ``cls`` (subclasses could override checks), when a
    field was never set (constructor bypassed), when the constructor rejects a value (stale
    digest, malformed number), or when a stored value is not in canonical form.
    """
    if type(record) is not cls:
        raise AuditError(f"{where}: expected a {cls.__name__}, got {type(record).__name__}")
    values = {}
    specs = fields(cls)  # type: ignore[arg-type]
    for spec in specs:
        try:
            values[spec.name] = object.__getattribute__(record, spec.name)
        except AttributeError:
            raise AuditError(
                f"{where}: field {spec.name} was never set (constructor bypassed); "
                f"build records with {cls.__name__}(...)"
            ) from None
    fresh = cls(**{s.name: values[s.name] for s in specs if s.init})
    for name, value in values.items():
        if not same_canonical(value, getattr(fresh, name)):
            raise AuditError(
                f"{where}: field {name} is not canonical ({value!r}); rebuild the record")
    return fresh
