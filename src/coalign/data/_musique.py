"""MuSiQue questions with their paragraphs: the official format and the FlashRAG export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coalign.data._base import Example
from coalign.data._io import Fields, read_rows, resolve_file, unique_ids

__all__ = ["load_musique"]

MUSIQUE_FILE = "musique/flashrag_format_musique_dev_first200.jsonl"


def load_musique(path: Path | str | None = None, limit: int | None = None) -> list[Example]:
    """Load MuSiQue questions with their paragraphs.

    Two formats, told apart per row: the official one (``musique_ans_v1.0_dev.jsonl``, also
    as a JSON array: ``paragraphs: [{idx, title, paragraph_text, is_supporting}]`` (20, the
    distractors included), ``question_decomposition``, ``answer``, ``answer_aliases``) and the
    FlashRAG export (the default shared file: ``golden_answers`` and ``metadata.
    question_decomposition`` whose ``support_paragraph`` is the hop's paragraph). The shared
    FlashRAG file holds only the gold paragraph of each hop (no distractors), so
    ``paragraphs`` is that set, ordered by the source paragraph index rather than by hop so
    that the order does not give the reasoning chain away.

    Args:
        path: a file in either format; default: the shared FlashRAG copy.
        limit: read at most this many rows (in file order).

    Returns:
        Examples with ``inputs = {"question", "paragraphs"}``, ``target`` = the (first golden)
        answer and ``meta`` holding ``supporting_titles`` and ``hops`` (titles in hop order),
        ``decomposition`` (``[{"question", "answer"}]`` per hop), ``type`` (e.g. ``"2hop"``),
        ``answer_aliases`` when there are any and, in the official format, ``answerable``.

    Raises:
        DataError: the file is missing or a row is malformed (message names line and field).
    """
    examples, wheres = [], []
    for where, obj in read_rows(resolve_file(path, MUSIQUE_FILE), limit):
        row = Fields(where, obj)
        examples.append(_flashrag(row) if "golden_answers" in obj else _official(row))
        wheres.append(where)
    unique_ids(zip(wheres, (e.id for e in examples), strict=True))
    return examples


def _flashrag(row: Fields) -> Example:
    answers = row.strings("golden_answers", nonempty=True)
    by_idx: dict[int, dict[str, str]] = {}
    hops, decomposition = [], []
    for step in row.sub("metadata").items("question_decomposition"):
        par = step.sub("support_paragraph")
        title = par.text("title")
        by_idx[par.get("idx", int)] = {"title": title, "text": par.text("paragraph_text")}
        hops.append(title)
        decomposition.append({"question": step.text("question"), "answer": step.text("answer")})
    return _example(row, answers[0], answers[1:], [by_idx[i] for i in sorted(by_idx)], hops,
                    decomposition, {})


def _official(row: Fields) -> Example:
    paragraphs, by_idx = [], {}
    for par in row.items("paragraphs"):
        title = par.text("title")
        paragraphs.append({"title": title, "text": par.get("paragraph_text", str)})
        by_idx[par.get("idx", int)] = title
    hops, decomposition = [], []
    for i, step in enumerate(row.items("question_decomposition")):
        support = step.get("paragraph_support_idx", int)
        if support not in by_idx:
            raise row.fail(f"question_decomposition[{i}].paragraph_support_idx",
                           f"names paragraph {support}, which is not among the paragraphs")
        hops.append(by_idx[support])
        decomposition.append({"question": step.text("question"), "answer": step.text("answer")})
    answerable = row.get("answerable", bool, optional=True)
    return _example(row, row.text("answer"), row.strings("answer_aliases", optional=True),
                    paragraphs, hops, decomposition,
                    {} if answerable is None else {"answerable": answerable})


def _example(row: Fields, answer: str, aliases: list[str], paragraphs: list[dict[str, str]],
             hops: list[str], decomposition: list[dict[str, str]],
             extra: dict[str, Any]) -> Example:
    meta: dict[str, Any] = {"supporting_titles": list(dict.fromkeys(hops)), "hops": hops,
                            "decomposition": decomposition, "type": f"{len(hops)}hop", **extra}
    if aliases:
        meta["answer_aliases"] = aliases
    return Example(id=row.text("id"), inputs={"question": row.text("question"),
                                              "paragraphs": paragraphs},
                   target=answer, meta=meta)
