"""Amazon session-based next-item selection (the reference's recommendation system's data).

Rows of the shared CSVs (derived from Amazon KDD Cup 2024 by the reference's authors): a
``question`` (an instruction, then ``Product Sequence:`` and the titles the user clicked or
viewed, one a line), ``choices`` (a list literal of candidate titles) and ``answer`` (the index
of the item the user went to next). Loaded as ``inputs = {"session": [title, ...],
"choices": [title, ...]}``, ``target`` = that index as a string (so the ``accuracy`` metric
compares it with the decider's pick), and the platform language in ``meta``.
"""

from __future__ import annotations

import ast
import csv
import json
import re
from pathlib import Path

from coalign.data._base import Example
from coalign.data._io import check_limit, resolve_file
from coalign.errors import ConfigError, DataError

__all__ = ["AMAZON_SPLITS", "load_amazon_sessions"]

ENGLISH_FILE = "amazon_session_rec/session_based_next_item_selection_dataset.csv"
MULTILINGUAL_FILE = "amazon_session_rec/multilingual_session_based_recommendation_dataset.csv"
AMAZON_SPLITS = ("train", "val", "test")
_MARKER = "Product Sequence:"
_LANGUAGE = re.compile(r"\bon an? (\w+) online shopping")


def load_amazon_sessions(path: Path | str | None = None, *, split: str | None = "test",
                         languages: str = "all", stratify: bool = True,
                         limit: int | None = None) -> list[Example]:
    """Load next-item selection examples.

    Args:
        path: one CSV with columns ``question, choices, answer``; default: both shared files
            (English first, then the multilingual one), as the reference uses them.
        split: ``train``, ``val``, ``test`` or ``None`` (every row). Rows are cut in file
            order: the last 20% is ``test``; of the rest, the first 85% is ``train`` and the
            remainder ``val``.
        languages: ``all``, ``english`` (the English file only) or ``multilingual``; ignored
            when ``path`` is given.
        stratify: cut each platform language separately (the default). The reference cuts
            each file as a whole; the multilingual file is sorted by language, so its
            validation set is all Italian and its test set English plus Japanese
            (``stratify=False`` reproduces that).
        limit: keep at most this many examples (after the split).

    Raises:
        DataError: a missing file or a malformed row (the message names file, row and field).
        ConfigError: an unknown split or languages value.
    """
    check_limit(limit)
    if split is not None and split not in AMAZON_SPLITS:
        raise ConfigError(f"split: must be one of {list(AMAZON_SPLITS)} or None (got {split!r})")
    if path is not None:
        files = [(resolve_file(path, ENGLISH_FILE), Path(path).stem)]
    else:
        chosen = {"all": ("en", "multi"), "english": ("en",), "multilingual": ("multi",)}
        if languages not in chosen:
            raise ConfigError(f"languages: must be one of {sorted(chosen)} (got {languages!r})")
        names = {"en": ENGLISH_FILE, "multi": MULTILINGUAL_FILE}
        files = [(resolve_file(None, names[key]), key) for key in chosen[languages]]
    groups: list[list[Example]] = []
    for file, tag in files:
        rows = _read_rows(file, tag)
        if stratify:
            by_language: dict[str, list[Example]] = {}
            for row in rows:
                by_language.setdefault(row.meta["language"], []).append(row)
            groups += by_language.values()
        else:
            groups.append(rows)
    parts: dict[str, list[Example]] = {"train": [], "val": [], "test": []}
    rest: list[list[Example]] = []
    for rows in groups:
        cut = int(len(rows) * 0.8)
        parts["test"] += rows[cut:]
        rest.append(rows[:cut])
    # the reference pools the files' first parts before its 85/15 cut; stratified, each
    # language is cut on its own
    for part in (rest if stratify else [[r for rows in rest for r in rows]]):
        keep = int(len(part) * 0.85)
        parts["train"] += part[:keep]
        parts["val"] += part[keep:]
    out = parts[split] if split is not None else [e for p in parts.values() for e in p]
    return out if limit is None else out[:limit]


def _read_rows(file: Path, tag: str) -> list[Example]:
    try:
        with file.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = {"question", "choices", "answer"} - set(reader.fieldnames or ())
            if missing:
                raise DataError(f"{file}: missing column(s) {sorted(missing)}; expected "
                                "question, choices, answer")
            return [_example(file, tag, i, row) for i, row in enumerate(reader, start=2)]
    except UnicodeDecodeError as exc:
        raise DataError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise DataError(f"{file}: malformed CSV ({exc})") from None


def _example(file: Path, tag: str, line: int, row: dict[str, str]) -> Example:
    where = f"{file.name} line {line}"
    question = row["question"] or ""
    if _MARKER not in question:
        raise DataError(f"{where}: field 'question' has no {_MARKER!r} line")
    head, _, tail = question.partition(_MARKER)
    session = [t.strip() for t in tail.splitlines() if t.strip()]
    if not session:
        raise DataError(f"{where}: field 'question' lists no products")
    choices = _choices(row["choices"] or "", where)
    answer = (row["answer"] or "").strip()
    if not answer.isdigit() or int(answer) >= len(choices):
        raise DataError(f"{where}: field 'answer' must be an index into the {len(choices)} "
                        f"choices (got {answer!r})")
    language = _LANGUAGE.search(head)
    return Example(
        id=f"amazon/{tag}/{line - 1}",
        inputs={"session": session, "choices": choices},
        target=str(int(answer)),
        meta={"language": language.group(1).lower() if language else "english",
              "instruction": head.strip()},
    )


def _choices(text: str, where: str) -> list[str]:
    # The files hold Python list literals (single quotes); JSON is the fallback, as in the
    # reference's own loader.
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        try:
            value = json.loads(text)
        except ValueError:
            raise DataError(f"{where}: field 'choices' is not a list literal") from None
    if (not isinstance(value, list) or len(value) < 2
            or not all(isinstance(c, str) and c.strip() for c in value)):
        raise DataError(f"{where}: field 'choices' must list at least two non-empty titles")
    return [c.strip() for c in value]
