"""JSON Lines input and output for audit records and contracts."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec

from coalign.audit._contract import AuditScope, PreferenceContract
from coalign.audit._errors import AuditError
from coalign.audit._pair import PreferencePair


def load_contract(path: str | Path) -> PreferenceContract:
    """Read a contract JSON file; errors name the file and the field."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AuditError(f"{path}: cannot read contract ({exc.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AuditError(f"{path}: not valid JSON ({exc})") from None
    try:
        return PreferenceContract.from_json(record)
    except (AuditError, TypeError) as exc:
        raise AuditError(f"{path}: {exc}") from None


def iter_rows(path: Path) -> Iterator[tuple[int, object]]:
    """``(line_number, parsed_json)`` for each non-blank line, reading one line at a time."""
    decode = msgspec.json.Decoder().decode
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise AuditError(f"{path}: cannot read pairs ({exc.strerror})") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            try:
                yield number, decode(line)
            except msgspec.MsgspecError:
                if line.strip():
                    yield number, _parse_slowly(line, path, number)


def _parse_slowly(line: bytes, path: Path, number: int) -> object:
    # The fast decoder refuses NaN/Infinity tokens and out-of-range numbers outright; the
    # standard parser reads them as floats so validation can name the offending field.
    try:
        return json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise AuditError(f"{path}:{number}: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise AuditError(f"{path}:{number}: invalid JSON ({exc.msg})") from None


def iter_pairs_jsonl(path: Path, scope: AuditScope) -> Iterator[tuple[int, PreferencePair]]:
    """Parse audit-format rows into freshly validated pairs, one line in memory at a time."""
    scope_json = scope.to_json()
    for number, row in iter_rows(path):
        try:
            yield number, PreferencePair.from_json(row, scope, scope_json=scope_json)
        except AuditError as exc:
            raise AuditError(f"{path}:{number}: {exc}") from None


def write_pairs_jsonl(path: str | Path, pairs: Iterable[PreferencePair]) -> int:
    """Write pairs atomically (temp file + rename); returns how many were written."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for pair in pairs:
                handle.write(json.dumps(pair.to_json(), ensure_ascii=False) + "\n")
                count += 1
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return count
