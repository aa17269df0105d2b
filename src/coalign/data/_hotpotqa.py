"""HotpotQA (and 2WikiMultiHopQA) questions with their paragraphs, from any published format."""

from __future__ import annotations

from pathlib import Path

from coalign.data._base import Example
from coalign.data._hotpot_formats import hotpot_example
from coalign.data._io import Fields, check_limit, read_rows, resolve_file, unique_ids

__all__ = ["load_hotpotqa"]

HOTPOTQA_FILE = "hotpotqa/hotpotqa_dev_unified.jsonl"


def load_hotpotqa(path: Path | str | None = None, limit: int | None = None) -> list[Example]:
    """Load HotpotQA questions with their paragraphs.

    Args:
        path: a file in any published HotpotQA format: the official JSON array
            (``hotpot_dev_distractor_v1.json``; 2WikiMultiHopQA uses it too), JSONL rows of the
            official, Hugging Face, IRCoT or FlashRAG shape, or the shared
            ``hotpotqa_dev_unified.jsonl`` (the default); see ``_hotpot_formats``.
        limit: read at most this many rows (in file order).

    Returns:
        Examples with ``inputs = {"question", "paragraphs": [{"title", "text"}, ...]}``,
        ``target`` = the gold answer and ``meta`` holding ``supporting_titles`` (the supporting
        paragraphs, in context order), ``type`` and ``level`` (``None`` where the source does
        not say) and ``answer_aliases`` when the row has any.

    Raises:
        DataError: the file is missing or a row is malformed (message names row and field).
    """
    check_limit(limit)
    file = resolve_file(path, HOTPOTQA_FILE)
    rows = read_rows(file, limit)
    examples = [hotpot_example(Fields(where, obj), obj) for where, obj in rows]
    unique_ids(zip((where for where, _ in rows), (e.id for e in examples), strict=True))
    return examples
