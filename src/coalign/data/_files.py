"""A dataset file a user brings, its format told from its content and read into Examples.

The first record decides (the suffix does not: ``.json`` files often hold one object a line):

* coalign rows: ``inputs`` (with ``id``, ``target``, ``meta``);
* HotpotQA, Hugging Face datasets: ``question`` and a ``context`` object ``{title, sentences}``;
* HotpotQA, official: ``question`` and ``context: [[title, [sentence, ...]], ...]``;
  2WikiMultiHopQA's official format is the same plus ``evidences``;
* HotpotQA unified / IRCoT / FlashRAG rows: ``context: [{title, text}]`` / ``question_text`` /
  ``golden_answers`` with ``metadata.context``;
* MuSiQue, official / FlashRAG: ``paragraphs`` with ``question_decomposition`` /
  ``golden_answers`` with ``metadata.question_decomposition``;
* PubMedQA (``ori_pqal.json``): one object keyed by PMID whose items hold ``QUESTION``;
* MBPP (sanitized or full): ``task_id`` and ``test_list``;
* HumanEval: ``task_id``, ``prompt``, ``test`` and ``entry_point``.

Any other JSONL is read through a field mapping (``_mapped``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalign.data._base import Example
from coalign.data._code import load_humaneval, load_mbpp
from coalign.data._hotpotqa import load_hotpotqa
from coalign.data._io import Fields, first_char, read_json, read_rows, unique_ids
from coalign.data._mapped import load_mapped
from coalign.data._musique import load_musique
from coalign.data._pubmedqa import load_pubmedqa
from coalign.data._shapes import check_shapes
from coalign.errors import ConfigError, DataError

__all__ = ["FORMATS", "DataFile", "detect_format", "load_file", "load_jsonl_examples"]


def load_jsonl_examples(path: Path, limit: int | None = None) -> list[Example]:
    """Examples from coalign's own rows ``{"id", "inputs": {...}, "target", "meta"?}``; ids
    must differ and every row needs a target (a missing one would silently score 0)."""
    out, wheres = [], []
    for where, obj in read_rows(path, limit):
        row = Fields(where, obj)
        if obj.get("target") is None:
            raise row.fail("target", "missing" if "target" not in obj else "is null")
        if "inputs" not in obj:
            raise row.fail("inputs", "missing (coalign rows are {id, inputs, target}; read "
                                     "other rows through a run config's data: {path, fields})")
        inputs = dict(row.get("inputs", dict))
        check_shapes(where, inputs, {n: f"inputs.{n}" for n in inputs}, obj["target"], "target")
        out.append(Example(str(row.get("id", (str, int))), inputs, obj["target"],
                           dict(row.get("meta", dict, optional=True) or {})))
        wheres.append(where)
    unique_ids(zip(wheres, (e.id for e in out), strict=True))
    return out


Loader = Callable[[Path, int | None, Path | None], list[Example]]

# format name -> (what it is, how it is read); a user's file is read whole (no published split)
FORMATS: dict[str, tuple[str, Loader]] = {
    "coalign": ("coalign rows {id, inputs, target}",
                lambda p, n, gt: load_jsonl_examples(p, n)),
    "hotpotqa-hf": ("HotpotQA, Hugging Face datasets rows", lambda p, n, gt: load_hotpotqa(p, n)),
    "hotpotqa-official": ("HotpotQA, official format", lambda p, n, gt: load_hotpotqa(p, n)),
    "2wikimultihopqa": ("2WikiMultiHopQA, official format",
                        lambda p, n, gt: load_hotpotqa(p, n)),
    "hotpotqa-unified": ("HotpotQA, unified rows", lambda p, n, gt: load_hotpotqa(p, n)),
    "hotpotqa-ircot": ("HotpotQA, IRCoT rows", lambda p, n, gt: load_hotpotqa(p, n)),
    "hotpotqa-flashrag": ("HotpotQA, FlashRAG rows", lambda p, n, gt: load_hotpotqa(p, n)),
    "musique": ("MuSiQue, official format", lambda p, n, gt: load_musique(p, n)),
    "musique-flashrag": ("MuSiQue, FlashRAG rows", lambda p, n, gt: load_musique(p, n)),
    "pubmedqa": ("PubMedQA, ori_pqal.json format",
                 lambda p, n, gt: load_pubmedqa(p, n, ground_truth=gt)),
    "mbpp": ("MBPP", lambda p, n, gt: load_mbpp(p, split=None, limit=n)),
    "humaneval": ("HumanEval", lambda p, n, gt: load_humaneval(p, limit=n)),
}

EXPECTED = ("expected coalign rows {id, inputs, target}, HotpotQA/2WikiMultiHopQA, MuSiQue, "
            "PubMedQA, MBPP or HumanEval records, or a field mapping (data: {path, fields})")


@dataclass(frozen=True)
class DataFile:
    """A dataset file and how to read it: ``fields`` maps system inputs (and ``target``,
    ``id``) to row fields; ``ground_truth`` labels a PubMedQA file (``{PMID: label}``)."""

    path: Path
    fields: Mapping[str, str] | None = None
    ground_truth: Path | None = None


def detect_format(path: Path) -> tuple[str, str]:
    """``(format name, description)`` of ``path`` from its first record, e.g.
    ``("hotpotqa-hf", "HotpotQA, Hugging Face datasets rows (JSONL)")``.

    Raises:
        DataError: no known format matches (the message names the file and what was expected).
    """
    container, first = _first_record(path)
    name = _classify(first) if isinstance(first, dict) else None
    if name is None:
        seen = (f"its first record has fields {sorted(first)[:12]}" if isinstance(first, dict)
                else "it holds no record" if first is None
                else f"its first record is a {type(first).__name__}")
        raise DataError(f"{path.name}: no known dataset format ({seen}); {EXPECTED}")
    if name == "pubmedqa":  # one object keyed by PMID, on one line or many
        container = "JSON object"
    return name, f"{FORMATS[name][0]} ({container})"


def load_file(source: DataFile, limit: int | None = None) -> tuple[list[Example], str]:
    """The examples of ``source`` and a description of the format they were read as."""
    path = source.path.expanduser()
    if not path.is_file():
        raise DataError(f"{path}: dataset file not found")
    if source.fields is not None:
        if source.ground_truth is not None:
            raise ConfigError("data: ground_truth labels a PubMedQA file; with a field mapping "
                              "the target comes from data.fields")
        return load_mapped(path, source.fields, limit), "records mapped by data.fields"
    name, description = detect_format(path)
    if source.ground_truth is not None and name != "pubmedqa":
        raise ConfigError(f"data: ground_truth labels a PubMedQA file; {path.name} is "
                          f"{description}")
    return FORMATS[name][1](path, limit, source.ground_truth), description


def _first_record(path: Path) -> tuple[str, Any]:
    """``(container, first record)``: a JSON array's first item, a JSONL file's first row, or a
    whole JSON object (a pretty-printed PubMedQA file); ``None`` for an empty one."""
    start = first_char(path)
    if start == "[":
        text = path.read_text(encoding="utf-8", errors="replace")
        at = text.index("[") + 1
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text) or text[at] == "]":
            return "JSON array", None
        try:
            return "JSON array", json.JSONDecoder().raw_decode(text, at)[0]
        except (json.JSONDecodeError, RecursionError):
            return "JSON array", read_json(path)  # raises the located error
    if start == "":
        return "empty file", None
    if start != "{":
        raise DataError(f"{path.name}: no known dataset format (it begins with {start!r}, not "
                        f"with [ or {{); {EXPECTED}")
    with path.open("rb") as handle:
        line = next((raw for raw in handle if raw.strip()), b"")
    try:
        return "JSONL", json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return "JSON object", read_json(path)  # several lines: one object, or a located error


def _classify(row: dict[str, Any]) -> str | None:
    """The format whose fields ``row`` has (see the module docstring), else ``None``."""
    meta = row.get("metadata")
    context = row.get("context")
    if "inputs" in row:
        return "coalign"
    if "question_text" in row and "contexts" in row:
        return "hotpotqa-ircot"
    if "golden_answers" in row and isinstance(meta, dict):
        return "musique-flashrag" if "question_decomposition" in meta else "hotpotqa-flashrag"
    if "paragraphs" in row and "question_decomposition" in row:
        return "musique"
    if "question" in row and isinstance(context, dict):
        return "hotpotqa-hf"
    if "question" in row and isinstance(context, list) and context:
        if isinstance(context[0], list):
            return "2wikimultihopqa" if "evidences" in row else "hotpotqa-official"
        return "hotpotqa-unified"
    if "task_id" in row:
        if "test_list" in row:
            return "mbpp"
        if "entry_point" in row and "test" in row:
            return "humaneval"
    if row and all(isinstance(v, dict) and "QUESTION" in v for v in list(row.values())[:3]):
        return "pubmedqa"
    if "target" in row:  # coalign rows missing their inputs: the loader names the field
        return "coalign"
    return None
