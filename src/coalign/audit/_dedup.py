"""Find repeated keys across a stream in bounded memory.

Each entry is ``(key, aux, row)``: a 64-bit fingerprint, a second fingerprint to detect
conflicts inside a group (same prompt id, different text), and the 1-based row it came from.
Entries are buffered; when the buffer is full it is sorted and spilled, split by the key's top
bits into partition files in a temporary folder. At the end each partition is loaded and
grouped on its own, so peak memory is the buffer plus one partition (about 1/64 of all
entries, 24 bytes each) instead of the whole stream.
"""

from __future__ import annotations

import shutil
import tempfile
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_ENTRY = np.dtype([("key", "<u8"), ("aux", "<u8"), ("row", "<u8")])
_PARTITION_BITS = 6


@dataclass(frozen=True)
class DuplicateSummary:
    """Groups of entries that share a key.

    ``groups``: keys seen more than once. ``extra_rows``: entries beyond the first of each
    group. ``conflicts``: groups whose entries disagree on ``aux``. The example tuples list
    the rows of up to a few groups.
    """

    groups: int = 0
    extra_rows: int = 0
    conflicts: int = 0
    examples: tuple[tuple[int, ...], ...] = ()
    conflict_examples: tuple[tuple[int, ...], ...] = ()


class DuplicateIndex:
    """Collects ``(key, aux, row)`` entries and summarizes repeated keys at the end."""

    def __init__(self, buffer_entries: int = 1 << 16, max_examples: int = 3) -> None:
        self._limit = buffer_entries
        self._max_examples = max_examples
        self._flat = array("Q")  # key, aux, row, key, aux, row, ...
        self._spill_dir: Path | None = None

    def add(self, key: int, aux: int, row: int) -> None:
        flat = self._flat
        flat.extend((key, aux, row))
        if len(flat) >= 3 * self._limit:
            self._spill()

    def add_many(self, keys: np.ndarray, aux: np.ndarray, rows: np.ndarray) -> None:
        """Add equal-length uint64 columns of entries at once."""
        block = np.empty(len(keys), dtype=_ENTRY)
        block["key"], block["aux"], block["row"] = keys, aux, rows
        start = 0
        while start < len(block):  # never hold more than the buffer limit in memory
            room = self._limit - len(self._flat) // 3
            self._flat.frombytes(block[start:start + room].tobytes())
            start += room
            if len(self._flat) >= 3 * self._limit:
                self._spill()

    def _buffered(self) -> np.ndarray:
        entries = np.frombuffer(self._flat, dtype="<u8").view(_ENTRY).copy()
        self._flat = array("Q")
        return entries

    def _spill(self) -> None:
        if self._spill_dir is None:
            self._spill_dir = Path(tempfile.mkdtemp(prefix="coalign-audit-dedup-"))
        entries = self._buffered()
        entries.sort(order="key")
        top = (entries["key"] >> np.uint64(64 - _PARTITION_BITS)).astype(np.int64)
        bounds = np.searchsorted(top, np.arange((1 << _PARTITION_BITS) + 1))
        for part in range(1 << _PARTITION_BITS):
            lo, hi = bounds[part], bounds[part + 1]
            if hi > lo:
                with open(self._spill_dir / f"{part:02d}.bin", "ab") as handle:
                    entries[lo:hi].tofile(handle)

    def _partitions(self) -> Iterator[np.ndarray]:
        if self._spill_dir is None:
            yield self._buffered()
            return
        self._spill()
        for path in sorted(self._spill_dir.glob("*.bin")):
            yield np.fromfile(path, dtype=_ENTRY)

    def summarize(self) -> DuplicateSummary:
        """Group all entries by key; call once, after the last ``add``."""
        groups = extra = conflicts = 0
        examples: list[tuple[int, ...]] = []
        conflict_examples: list[tuple[int, ...]] = []
        try:
            for entries in self._partitions():
                if len(entries) < 2:
                    continue
                entries.sort(order=["key", "aux", "row"])
                keys, aux = entries["key"], entries["aux"]
                starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
                sizes = np.diff(np.r_[starts, len(keys)])
                repeated = sizes > 1
                groups += int(repeated.sum())
                extra += int((sizes[repeated] - 1).sum())
                # A group conflicts when aux changes inside it (entries are sorted by aux).
                changes = np.flatnonzero((keys[1:] == keys[:-1]) & (aux[1:] != aux[:-1])) + 1
                conflicted = np.unique(np.searchsorted(starts, changes, side="right") - 1)
                conflicts += len(conflicted)
                first = np.minimum.reduceat(entries["row"], starts)
                self._collect(entries, starts, sizes, first, np.flatnonzero(repeated), examples)
                self._collect(entries, starts, sizes, first, conflicted, conflict_examples)
        finally:
            self.close()
        return DuplicateSummary(groups, extra, conflicts, tuple(examples), tuple(conflict_examples))

    def _collect(self, entries: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                 first: np.ndarray, which: np.ndarray, into: list[tuple[int, ...]]) -> None:
        # Keep the groups that appear earliest in the stream, so the examples do not depend
        # on the (per-process) fingerprint order.
        earliest = which[np.argsort(first[which], kind="stable")[: self._max_examples]]
        for group in earliest:
            rows = entries["row"][starts[group]: starts[group] + sizes[group]]
            into.append(tuple(sorted(int(r) for r in rows)))
        into.sort()
        del into[self._max_examples:]

    def close(self) -> None:
        """Remove spill files (also done by ``summarize``)."""
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir = None
