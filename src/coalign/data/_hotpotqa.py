"""HotpotQA dev (distractor setting, paragraph-level gold labels) from the shared data folder."""

from __future__ import annotations

from pathlib import Path

from coalign.data._base import Example
from coalign.data._io import Fields, iter_jsonl, resolve_file, unique_ids

__all__ = ["load_hotpotqa"]

HOTPOTQA_FILE = "hotpotqa/hotpotqa_dev_unified.jsonl"


def load_hotpotqa(path: Path | str | None = None, limit: int | None = None) -> list[Example]:
    """Load HotpotQA questions with their distractor paragraphs.

    Args:
        path: a file in the ``hotpotqa_dev_unified.jsonl`` schema; default: the shared copy.
        limit: read at most this many rows (in file order).

    Returns:
        Examples with ``inputs = {"question", "paragraphs": [{"title", "text"}, ...]}``,
        ``target`` = the gold answer and ``meta`` holding ``supporting_titles`` (the paragraphs
        flagged ``is_supporting``, in context order), ``type`` and ``level`` (``None`` where the
        source does not say) and ``answer_aliases`` when the row has any.

    Raises:
        DataError: the file is missing or a row is malformed (message names line and field).
    """
    examples, wheres = [], []
    for where, obj in iter_jsonl(resolve_file(path, HOTPOTQA_FILE), limit):
        row = Fields(where, obj)
        paragraphs, supporting = [], []
        for par in row.items("context"):
            title, text = par.text("title"), par.get("text", str)
            paragraphs.append({"title": title, "text": text})
            if par.get("is_supporting", bool):
                supporting.append(title)
        meta = {
            "supporting_titles": supporting,
            "type": row.get("type", str, optional=True),
            "level": row.get("level", str, optional=True),
        }
        aliases = row.strings("answer_aliases", optional=True)
        if aliases:
            meta["answer_aliases"] = aliases
        wheres.append(where)
        examples.append(
            Example(
                id=row.text("id"),
                inputs={"question": row.text("question"), "paragraphs": paragraphs},
                target=row.text("answer"),
                meta=meta,
            )
        )
    unique_ids(zip(wheres, (e.id for e in examples), strict=True))
    return examples
