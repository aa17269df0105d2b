"""The shapes of the inputs coalign's systems read by name, checked on the rows a user brings.

coalign rows (``{id, inputs, target}``) and mapped rows hold whatever their file holds, while
the named loaders build these shapes themselves. A row of the wrong shape would run anyway: an
integer question is prompted as "5", paragraphs given as plain strings fail retrieval halfway,
and an integer gold answer fails the F1 metric after every LLM call of the run was paid for.
Only the names of coalign's own QA inputs are checked: any other input is the user's to shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from coalign.data._io import Fields

__all__ = ["check_shapes"]


def _text(row: Fields, field: str) -> None:
    row.get(field, str)


def _paragraphs(row: Fields, field: str) -> None:
    for par in row.items(field, nonempty=False):
        par.get("text", str)
        par.get("title", str, optional=True)


# input name -> the check of its value (``field`` is the name the file gives it)
SHAPES: dict[str, Callable[[Fields, str], None]] = {
    "question": _text,
    "paragraphs": _paragraphs,  # [{"title"?, "text"}], as the retriever and prompts read them
}


def check_shapes(where: str, inputs: Mapping[str, Any], names: Mapping[str, str],
                 target: Any, target_name: str) -> None:
    """Refuse a row whose known inputs, or whose target, have the wrong shape.

    Args:
        where: the row, e.g. ``"rows.jsonl line 3"``.
        inputs: system input name -> value.
        names: system input name -> the field it was read from (``inputs.question``, or the
            source of a field mapping), as the error names it.
        target: the gold target; a multi-hop QA row (``question`` and ``paragraphs``) needs it
            as text, the answer its F1/EM metrics compare (other rows may score numbers with
            the user's own metric, e.g. a question whose answer is 42).
        target_name: the field the target was read from.

    Raises:
        DataError: naming the row and the field.
    """
    for name, check in SHAPES.items():
        if name in inputs:
            check(Fields(where, {names[name]: inputs[name]}), names[name])
    if {"question", "paragraphs"} <= inputs.keys() and not isinstance(target, str):
        raise Fields(where, {}).fail(target_name, f"must be a string, the answer to the "
                                                  f"question (got {type(target).__name__}); "
                                                  'write it as text, e.g. "5"')
