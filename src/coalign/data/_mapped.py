"""Any JSONL (or JSON array) of records read through a field mapping: system input -> row field.

``{"question": "q", "paragraphs": "ctx", "target": "answer", "id": "qid"}`` makes each row's
``q`` the input ``question``, ``ctx`` the input ``paragraphs``, ``answer`` the target and
``qid`` the id. ``target`` and ``id`` are the two reserved names (``id`` is optional: rows are
then numbered from 0); a dotted source (``meta.answer``) reaches into nested objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coalign.data._base import Example
from coalign.data._io import read_rows, unique_ids
from coalign.data._shapes import check_shapes
from coalign.errors import ConfigError, DataError

__all__ = ["load_mapped"]

RESERVED = ("id", "target")


def load_mapped(path: Path, fields: Mapping[str, str], limit: int | None = None
                ) -> list[Example]:
    """Examples from the records of ``path`` through ``fields`` (see the module docstring).

    Raises:
        ConfigError: the mapping has no ``target`` or no input.
        DataError: a row lacks a mapped field, or ids repeat (message names file, row, field).
    """
    if "target" not in fields:
        raise ConfigError("data.fields: map 'target' to the row field holding the gold answer, "
                          "e.g. target: answer")
    inputs = {name: source for name, source in fields.items() if name not in RESERVED}
    if not inputs:
        raise ConfigError("data.fields: map at least one system input to a row field, e.g. "
                          "question: q")
    examples, wheres = [], []
    for number, (where, obj) in enumerate(read_rows(path, limit)):
        target = _lookup(where, obj, fields["target"], "target")
        if target is None:
            raise DataError(f"{where}: field {fields['target']!r} (the target) is null")
        ident: Any = number
        if "id" in fields:
            ident = _lookup(where, obj, fields["id"], "id")
            if not isinstance(ident, (str, int)) or isinstance(ident, bool):
                raise DataError(f"{where}: field {fields['id']!r} (the id) must be a string or "
                                f"an int (got {type(ident).__name__})")
        values = {name: _lookup(where, obj, source, name) for name, source in inputs.items()}
        check_shapes(where, values, inputs, target, fields["target"])
        examples.append(Example(str(ident), values, target))
        wheres.append(where)
    unique_ids(zip(wheres, (e.id for e in examples), strict=True))
    return examples


def _lookup(where: str, obj: dict[str, Any], source: str, name: str) -> Any:
    value: Any = obj
    for i, part in enumerate(source.split(".")):
        if not isinstance(value, dict) or part not in value:
            missing = ".".join(source.split(".")[:i + 1])
            raise DataError(f"{where}: field {missing!r} missing (data.fields maps {name!r} to "
                            f"{source!r}; the row has {sorted(obj)})")
        value = value[part]
    return value
