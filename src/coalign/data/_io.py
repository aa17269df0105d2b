"""Locating dataset files and reading their rows with one-line, located errors."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from coalign.errors import ConfigError, DataError

__all__ = ["DATA_DIR_ENV", "Fields", "data_dir", "first_char", "iter_jsonl", "read_json",
           "read_rows", "resolve_file", "unique_ids"]

DATA_DIR_ENV = "COALIGN_DATA_DIR"


def data_dir() -> Path:
    """The folder holding the shared benchmark data.

    ``$COALIGN_DATA_DIR`` when set; else ``<repo>/../shared/data`` when this file sits in a
    source checkout that has it; else a user folder (``$COALIGN_CACHE_DIR/data`` or
    ``$XDG_CACHE_HOME/coalign/data``), where an installed wheel looks by default.
    """
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    checkout = (Path(__file__).resolve().parents[3] / ".." / "shared" / "data").resolve()
    if checkout.is_dir():
        return checkout
    root = os.environ.get("COALIGN_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "data"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "coalign" / "data"


def resolve_file(path: Path | str | None, default: str) -> Path:
    """``path`` if given, else ``data_dir() / default``; the file must exist."""
    resolved = Path(path).expanduser() if path is not None else data_dir() / default
    if not resolved.is_file():
        raise DataError(
            f"{resolved}: dataset file not found; pass path=... or set {DATA_DIR_ENV} "
            f"to the folder that holds {default}"
        )
    return resolved


def check_limit(limit: int | None) -> None:
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise ConfigError(f"limit: must be a non-negative integer or None (got {limit!r})")


class _NonFinite(ValueError):
    pass


def _no_constants(name: str) -> Any:
    raise _NonFinite(name)


class _RepeatedKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


def _loads(text: str, where: str) -> Any:
    """``json.loads`` with one-line, located errors; NaN/Infinity (valid in Python's JSON, not
    in JSON) are refused: a NaN target would silently score 0; so is a key given twice in one
    object, which JSON parsers resolve by silently keeping one (a PMID-keyed file would drop
    an item)."""
    try:
        return json.loads(text, parse_constant=_no_constants, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: invalid JSON ({exc.msg}, line {exc.lineno} column "
                        f"{exc.colno})") from None
    except _NonFinite as exc:
        raise DataError(f"{where}: non-finite number {exc} (JSON has none)") from None
    except _RepeatedKey as exc:
        raise DataError(f"{where}: key {str(exc)!r} given twice in one object") from None
    except RecursionError:
        raise DataError(f"{where}: JSON nested too deeply") from None


def iter_jsonl(path: Path, limit: int | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("<file> line N", object)`` per non-blank line, stopping after ``limit`` rows."""
    check_limit(limit)
    count = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if limit is not None and count >= limit:
                return
            where = f"{path.name} line {number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{where}: invalid UTF-8 at byte {exc.start}") from None
            if not line.strip():
                continue
            obj = _loads(line, where)
            if not isinstance(obj, dict):
                raise DataError(f"{where}: expected a JSON object (got {type(obj).__name__})")
            count += 1
            yield where, obj


def first_char(path: Path) -> str:
    """The file's first non-blank character (``""`` for a blank file): ``[`` begins a JSON
    array, ``{`` a JSON object or JSONL rows. Read by content, not by suffix: published files
    are often named ``.json`` while holding one object a line, and the other way round."""
    with path.open("rb") as handle:
        while chunk := handle.read(4096):
            stripped = chunk.lstrip()
            if stripped:
                return stripped[:1].decode("ascii", errors="replace")
    return ""


def read_rows(path: Path, limit: int | None = None) -> list[tuple[str, dict[str, Any]]]:
    """``(where, object)`` per record of a JSON array (``"<file> item I"``) or of JSONL rows
    (``"<file> line N"``), told apart by content; at most ``limit`` records."""
    check_limit(limit)
    if first_char(path) != "[":
        return list(iter_jsonl(path, limit))
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(f"{path.name}: expected a JSON array of records")
    rows = []
    for i, obj in enumerate(data[:limit] if limit is not None else data):
        if not isinstance(obj, dict):
            raise DataError(f"{path.name} item {i}: expected an object (got {type(obj).__name__})")
        rows.append((f"{path.name} item {i}", obj))
    return rows


def read_json(path: Path) -> Any:
    """Parse a whole JSON file, mapping parse errors to a located ``DataError``."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataError(f"{path.name} line {line}: invalid UTF-8 at byte {exc.start}") from None
    return _loads(text, path.name)


def unique_ids(ids: Iterable[tuple[str, str]]) -> None:
    """Refuse a repeated example id: ``(where, id)`` pairs in file order. A repeated id would
    drop one example from an id-keyed run store and count the other twice."""
    seen: dict[str, str] = {}
    for where, ident in ids:
        if ident in seen:
            raise DataError(f"{where}: id {ident!r} repeats the id of {seen[ident]}")
        seen[ident] = where


class Fields:
    """Typed access to one JSON object; failures name the row and the dotted field path."""

    def __init__(self, where: str, obj: Any, prefix: str = "") -> None:
        self._where = where
        self._obj = obj
        self._prefix = prefix

    def fail(self, field: str, problem: str) -> DataError:
        return DataError(f"{self._where}: field '{self._prefix}{field}' {problem}")

    def get(self, field: str, kind: type | tuple[type, ...], *, optional: bool = False) -> Any:
        """The value of ``field``; ``None`` allowed only when ``optional``."""
        if not isinstance(self._obj, dict) or field not in self._obj:
            if optional:
                return None
            raise self.fail(field, "missing")
        value = self._obj[field]
        if value is None and optional:
            return None
        # bool is an int subclass: never accept it where a number or string is expected.
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
            raise self.fail(field, f"must be {_kind_name(kind)} (got {type(value).__name__})")
        return value

    def text(self, field: str, *, optional: bool = False) -> str | None:
        value = self.get(field, str, optional=optional)
        if value is not None and not value.strip() and not optional:
            raise self.fail(field, "is empty")
        return value

    def strings(self, field: str, *, optional: bool = False, nonempty: bool = False) -> list[str]:
        """A list of strings (``[]`` when optional and absent)."""
        values = self.get(field, list, optional=optional)
        if values is None:
            return []
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise self.fail(f"{field}[{i}]", f"must be a string (got {type(value).__name__})")
        if nonempty and not values:
            raise self.fail(field, "is an empty list")
        return list(values)

    def items(self, field: str, *, nonempty: bool = True) -> list[Fields]:
        """A list of objects, each wrapped so its own errors carry ``field[i].``."""
        values = self.get(field, list)
        if nonempty and not values:
            raise self.fail(field, "is an empty list")
        out = []
        for i, value in enumerate(values):
            if not isinstance(value, dict):
                raise self.fail(f"{field}[{i}]", f"must be an object (got {type(value).__name__})")
            out.append(Fields(self._where, value, f"{self._prefix}{field}[{i}]."))
        return out

    def sub(self, field: str) -> Fields:
        return Fields(self._where, self.get(field, dict), f"{self._prefix}{field}.")


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", list: "a list", dict: "an object", bool: "true/false", int: "an int"}
    return " or ".join(names.get(k, k.__name__) for k in _kinds(kind))
