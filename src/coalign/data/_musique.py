"""MuSiQue-Ans dev (first 200, 2-hop) in FlashRAG format from the shared data folder."""

from __future__ import annotations

from pathlib import Path

from coalign.data._base import Example
from coalign.data._io import Fields, iter_jsonl, resolve_file, unique_ids

__all__ = ["load_musique"]

MUSIQUE_FILE = "musique/flashrag_format_musique_dev_first200.jsonl"


def load_musique(path: Path | str | None = None, limit: int | None = None) -> list[Example]:
    """Load MuSiQue questions with their supporting paragraphs.

    The shared file holds only the gold paragraph of each hop (no distractors), so
    ``paragraphs`` is that set, ordered by the source paragraph index rather than by hop so
    that the order does not give the reasoning chain away.

    Args:
        path: a file in the FlashRAG MuSiQue schema; default: the shared copy.
        limit: read at most this many rows (in file order).

    Returns:
        Examples with ``inputs = {"question", "paragraphs"}``, ``target`` = the first golden
        answer and ``meta`` holding ``supporting_titles`` and ``hops`` (titles in hop order),
        ``decomposition`` (``[{"question", "answer"}]`` per hop), ``type`` (e.g. ``"2hop"``)
        and ``answer_aliases`` (the other golden answers) when there are any.

    Raises:
        DataError: the file is missing or a row is malformed (message names line and field).
    """
    examples, wheres = [], []
    for where, obj in iter_jsonl(resolve_file(path, MUSIQUE_FILE), limit):
        row = Fields(where, obj)
        answers = row.strings("golden_answers", nonempty=True)
        by_idx: dict[int, dict[str, str]] = {}
        hops, decomposition = [], []
        for step in row.sub("metadata").items("question_decomposition"):
            par = step.sub("support_paragraph")
            title = par.text("title")
            by_idx[par.get("idx", int)] = {"title": title, "text": par.text("paragraph_text")}
            hops.append(title)
            decomposition.append({"question": step.text("question"), "answer": step.text("answer")})
        meta = {
            "supporting_titles": list(dict.fromkeys(hops)),
            "hops": hops,
            "decomposition": decomposition,
            "type": f"{len(hops)}hop",
        }
        if len(answers) > 1:
            meta["answer_aliases"] = answers[1:]
        wheres.append(where)
        examples.append(
            Example(
                id=row.text("id"),
                inputs={
                    "question": row.text("question"),
                    "paragraphs": [by_idx[i] for i in sorted(by_idx)],
                },
                target=answers[0],
                meta=meta,
            )
        )
    unique_ids(zip(wheres, (e.id for e in examples), strict=True))
    return examples
