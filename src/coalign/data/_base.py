"""Dataset records shared by every loader, system and benchmark."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coalign.errors import ConfigError, DataError

__all__ = ["DataError", "Example", "split"]


@dataclass(frozen=True)
class Example:
    """One task instance: system inputs, the gold target, and free-form metadata.

    ``inputs`` are the fields fed to the system's source node (e.g. ``question`` and
    ``paragraphs``); ``target`` is what the global metric compares against.
    """

    id: str
    inputs: Mapping[str, Any]
    target: Any
    meta: Mapping[str, Any] = field(default_factory=dict)


def split(
    examples: Sequence[Example], sizes: Sequence[int], seed: int = 0
) -> list[list[Example]]:
    """Deterministically shuffle and cut ``examples`` into consecutive parts of ``sizes``.

    A size of -1 (allowed last only) takes the remainder.
    """
    items = list(examples)
    random.Random(seed).shuffle(items)
    parts, start = [], 0
    for i, n in enumerate(sizes):
        if n == -1:
            if i != len(sizes) - 1:
                raise ConfigError("split: -1 (the remainder) is allowed only as the last size")
            n = len(items) - start
        if n < 0 or start + n > len(items):
            raise ConfigError(f"split: sizes {list(sizes)} exceed the {len(items)} examples")
        parts.append(items[start : start + n])
        start += n
    return parts
