"""Attributes of coalign swapped for the duration of a benchmark's runs, then restored: how a
benchmark switches a rule off (``rule_ablation``) or watches a decision (``pick_quality``)
without a hook in the library."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any


@contextlib.contextmanager
def patched(patches: Sequence[tuple[Any, str, Any]]) -> Iterator[None]:
    """Each ``(owner, name, value)`` set while inside; the old values back on exit, however it
    is left."""
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    try:
        for owner, name, value in patches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)
