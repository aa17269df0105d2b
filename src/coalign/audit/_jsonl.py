"""JSON Lines input and output for audit records and contracts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec

from coalign.audit._contract import AuditScope, PreferenceContract
from coalign.audit._errors import AuditError
from coalign.audit._pair import PreferencePair
from coalign.files import write_atomic


def load_contract(path: str | Path) -> PreferenceContract:
    """Read a contract JSON file; errors name the file and the field."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AuditError(f"{path}: cannot read contract ({exc.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AuditError(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise AuditError(f"{path}: JSON nested too deeply") from None
    try:
        return PreferenceContract.from_json(record)
    except (AuditError, TypeError) as exc:
        raise AuditError(f"{path}: {exc}") from None


#: Bytes of lines read at once: enough rows (about 200) to amortize the per-block work of the
#: bulk path, few enough that a block's lines and decoded rows stay in the CPU caches
#: (measured: 1 MiB blocks cost about a quarter more per pair than 128-256 KiB).
BLOCK_BYTES = 1 << 18


def iter_line_blocks(path: Path, block_bytes: int = BLOCK_BYTES
                     ) -> Iterator[tuple[int, list[bytes]]]:
    """``(first_line_number, lines)`` for consecutive blocks of about ``block_bytes``."""
    try:
        # A 64 KiB buffer instead of 8 KiB: a fraction of the read calls, and lines of about a
        # kilobyte no longer straddle most buffer refills (readlines costs a third as much).
        handle = open(path, "rb", buffering=1 << 16)
    except OSError as exc:
        raise AuditError(f"{path}: cannot read pairs ({exc.strerror})") from None
    with handle:
        number = 1
        while lines := handle.readlines(block_bytes):
            yield number, lines
            number += len(lines)


def parse_lines(path: Path, first: int, lines: list[bytes]) -> Iterator[tuple[int, object]]:
    """``(line_number, parsed_json)`` for each non-blank line of a block."""
    decode = msgspec.json.Decoder().decode
    for number, line in enumerate(lines, start=first):
        try:
            yield number, decode(line)
        except (msgspec.MsgspecError, UnicodeDecodeError):  # invalid UTF-8 inside a string
            if line.strip():
                yield number, _parse_slowly(line, path, number)
        except RecursionError:  # both parsers recurse: a hostile row must not end in a traceback
            raise AuditError(f"{path}:{number}: JSON nested too deeply") from None


def iter_rows(path: Path) -> Iterator[tuple[int, object]]:
    """``(line_number, parsed_json)`` for each non-blank line, one block in memory at a time."""
    for first, lines in iter_line_blocks(path):
        yield from parse_lines(path, first, lines)


def _parse_slowly(line: bytes, path: Path, number: int) -> object:
    # The fast decoder refuses NaN/Infinity tokens and out-of-range numbers outright; the
    # standard parser reads them as floats so validation can name the offending field.
    try:
        return json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise AuditError(f"{path}:{number}: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise AuditError(f"{path}:{number}: invalid JSON ({exc.msg})") from None
    except RecursionError:
        raise AuditError(f"{path}:{number}: JSON nested too deeply") from None


def pairs_from_rows(path: Path, scope: AuditScope, rows: Iterable[tuple[int, object]]
                    ) -> Iterator[tuple[int, PreferencePair]]:
    """Parsed audit-format rows as freshly validated pairs; errors name file and line."""
    scope_json = scope.to_json()
    for number, row in rows:
        try:
            yield number, PreferencePair.from_json(row, scope, scope_json=scope_json)
        except AuditError as exc:
            raise AuditError(f"{path}:{number}: {exc}") from None


def iter_pairs_jsonl(path: Path, scope: AuditScope) -> Iterator[tuple[int, PreferencePair]]:
    """Parse audit-format rows into freshly validated pairs, one block in memory at a time."""
    return pairs_from_rows(path, scope, iter_rows(path))


def write_pairs_jsonl(path: str | Path, pairs: Iterable[PreferencePair]) -> int:
    """Write pairs atomically (temp file + rename); returns how many were written."""
    lines = (json.dumps(pair.to_json(), ensure_ascii=False) + "\n" for pair in pairs)
    return write_text_atomic(Path(path), lines, "pairs")


def write_text_atomic(path: Path, chunks: Iterable[str], what: str) -> int:
    """Write ``chunks`` to ``path`` through a temp file renamed into place; returns how many.

    A failed write (full disk, read-only folder) is one ``AuditError`` naming ``what`` and
    ``path``, and leaves neither ``path`` half-written nor the temp file behind.
    """
    try:
        return write_atomic(path, chunks)
    except OSError as exc:
        raise AuditError(f"{path}: cannot write {what} ({exc.strerror}); nothing was written: "
                         "free disk space or choose a writable folder") from None
