"""Find repeated keys across a stream in bounded memory.

Each entry is ``(key, aux, row)``: a 64-bit fingerprint, a second fingerprint to detect
conflicts inside a group (same prompt id, different text), and the 1-based row it came from.
Entries are buffered; when the buffer is full it is spilled, split by the key's top bits into
64 partitions, to one file in a temporary folder (one segment per spill and partition; a file
per partition cost an ``open`` per partition and spill, slow on overlay file systems). At the
end each partition's segments are read back, sorted by key and grouped on their own, so peak
memory is the buffer plus one partition (about 1/64 of all entries, 24 bytes each) instead of
the whole stream.

Entries are rows of a plain ``(n, 3)`` uint64 array. Only the key is ever sorted on (a spill
needs just a 6-bit counting sort), because numpy sorts structured records field by field
about twenty times slower, and grouping needs nothing but equal keys side by side.
"""

from __future__ import annotations

import shutil
import tempfile
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

_PARTITION_BITS = 6
_ENTRY_BYTES = 24  # key, aux, row: three little-endian uint64


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
        self._spill_file: BinaryIO | None = None
        self._segments: list[list[int]] = []  # per spill: byte offsets of its partitions

    def add(self, key: int, aux: int, row: int) -> None:
        flat = self._flat
        flat.extend((key, aux, row))
        if len(flat) >= 3 * self._limit:
            self._spill()

    def add_many(self, entries: np.ndarray) -> None:
        """Add an ``(n, 3)`` uint64 array of ``(key, aux, row)`` entries at once."""
        start = 0
        while start < len(entries):  # never hold more than the buffer limit in memory
            room = self._limit - len(self._flat) // 3
            self._flat.frombytes(entries[start:start + room].tobytes())
            start += room
            if len(self._flat) >= 3 * self._limit:
                self._spill()

    def _buffered(self) -> np.ndarray:
        entries = np.frombuffer(self._flat, dtype="<u8").reshape(-1, 3)  # keeps the old array
        self._flat = array("Q")
        return entries

    def _spill(self) -> None:
        if self._spill_file is None:
            self._spill_dir = Path(tempfile.mkdtemp(prefix="coalign-audit-dedup-"))
            self._spill_file = open(self._spill_dir / "entries.bin", "w+b")  # noqa: SIM115
        entries = self._buffered()
        top = (entries[:, 0] >> np.uint64(64 - _PARTITION_BITS)).astype(np.uint8)
        order = np.argsort(top, kind="stable")  # a counting sort on small integers
        bounds = np.searchsorted(top[order], np.arange((1 << _PARTITION_BITS) + 1))
        self._segments.append((self._spill_file.tell() + bounds * _ENTRY_BYTES).tolist())
        self._spill_file.write(entries[order])

    def _partitions(self) -> Iterator[np.ndarray]:
        if self._spill_file is None:
            yield self._buffered()
            return
        self._spill()
        handle = self._spill_file
        for part in range(1 << _PARTITION_BITS):
            pieces = []
            for offsets in self._segments:
                handle.seek(offsets[part])
                pieces.append(handle.read(offsets[part + 1] - offsets[part]))
            yield np.frombuffer(b"".join(pieces), dtype="<u8").reshape(-1, 3)

    def summarize(self) -> DuplicateSummary:
        """Group all entries by key; call once, after the last ``add``."""
        groups = extra = conflicts = 0
        examples: list[tuple[int, ...]] = []
        conflict_examples: list[tuple[int, ...]] = []
        try:
            for entries in self._partitions():
                if len(entries) < 2:
                    continue
                entries = entries[np.argsort(entries[:, 0])]
                keys, aux, rows = entries.T
                starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
                sizes = np.diff(np.r_[starts, len(keys)])
                repeated = sizes > 1
                groups += int(repeated.sum())
                extra += int((sizes[repeated] - 1).sum())
                # A group conflicts when aux changes anywhere inside it, in whatever order.
                changes = np.flatnonzero((keys[1:] == keys[:-1]) & (aux[1:] != aux[:-1])) + 1
                conflicted = np.unique(np.searchsorted(starts, changes, side="right") - 1)
                conflicts += len(conflicted)
                first = np.minimum.reduceat(rows, starts)
                self._collect(rows, starts, sizes, first, np.flatnonzero(repeated), examples)
                self._collect(rows, starts, sizes, first, conflicted, conflict_examples)
        finally:
            self.close()
        return DuplicateSummary(groups, extra, conflicts, tuple(examples), tuple(conflict_examples))

    def _collect(self, rows: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                 first: np.ndarray, which: np.ndarray, into: list[tuple[int, ...]]) -> None:
        # Keep the groups that appear earliest in the stream, so the examples do not depend
        # on the (per-process) fingerprint order.
        earliest = which[np.argsort(first[which], kind="stable")[: self._max_examples]]
        for group in earliest:
            group_rows = rows[starts[group]: starts[group] + sizes[group]]
            into.append(tuple(sorted(int(r) for r in group_rows)))
        into.sort()
        del into[self._max_examples:]

    def close(self) -> None:
        """Remove spill files (also done by ``summarize``)."""
        if self._spill_file is not None:
            self._spill_file.close()
            self._spill_file = None
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir = None
