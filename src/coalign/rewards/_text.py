"""Text helpers shared by rendering and features: tokens, field roles, evidence snippets.

A component's inputs are split into *query* fields (named like a query, e.g. ``question``) and
*evidence* fields (everything else: retrieved passages, an upstream note); without a query-named
field, short strings are the query and lists, mappings and long strings the evidence. The reward
usually hinges on how the output relates to both, so rendering and features share the split.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from coalign.pairs import canonical_json

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
QUERY_MAX_TOKENS = 64  # a string input longer than this is treated as evidence, not as the query


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (the unit of every overlap feature)."""
    return _WORD.findall(text.lower())


def as_text(value: Any) -> str:
    """Flatten one field value to plain text (strings as-is, containers item by item)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return " ".join(f"{k}: {as_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return " ".join(as_text(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if isinstance(value, int | bool) else canonical_json(value)


def values_text(fields: Mapping[str, Any]) -> str:
    """The field values of ``fields`` as text, without the field names."""
    return " ".join(as_text(v) for v in fields.values())


QUERY_NAMES = ("question", "query", "prompt", "instruction", "task", "claim", "request")


def split_inputs(inputs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a component's inputs into (query fields, evidence fields).

    Fields named like a query (``question``, ``query``, ``*_question`` …) are the query and every
    other field is evidence (an upstream ``info`` or ``passages``), so a short upstream note still
    counts as evidence. Inputs with no query-named field fall back to ``split_fields``.
    """
    query = {k: v for k, v in inputs.items() if k.lower().endswith(QUERY_NAMES)}
    if not query:
        return split_fields(inputs)
    return query, {k: v for k, v in inputs.items() if k not in query}


def split_fields(fields: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split ``fields`` into (short query-like fields, evidence-like fields), in order."""
    query: dict[str, Any] = {}
    evidence: dict[str, Any] = {}
    for key, value in fields.items():
        short = isinstance(value, str | int | float | bool) or value is None
        if short and len(tokens(as_text(value))) <= QUERY_MAX_TOKENS:
            query[key] = value
        else:
            evidence[key] = value
    return query, evidence


def clip(text: str, max_chars: int) -> str:
    """Cut ``text`` to ``max_chars`` at a word boundary, marking the cut with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    if max_chars <= 1:
        return text[:max_chars]
    cut = text[: max_chars - 1]
    space = cut.rfind(" ")
    if space > max_chars // 2:
        cut = cut[:space]
    return cut + "…"


def best_sentences(text: str, focus: set[str], max_chars: int) -> str:
    """The sentences of ``text`` sharing most tokens with ``focus``, in original order, clipped.

    Long evidence cannot fit the encoder window; the sentences that mention the output's or the
    question's words are the ones that show whether the output is supported.
    """
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    sentences = [s for s in _SENTENCE.split(text) if s]
    if len(sentences) <= 1 or not focus:
        return clip(text, max_chars)
    ranked = sorted(
        range(len(sentences)),
        key=lambda i: (-len(focus.intersection(tokens(sentences[i]))), i),
    )
    chosen: list[int] = []
    used = 0
    for i in ranked:
        if used + len(sentences[i]) + 1 > max_chars and chosen:
            continue
        chosen.append(i)
        used += len(sentences[i]) + 1
        if used >= max_chars:
            break
    return clip(" ".join(sentences[i] for i in sorted(chosen)), max_chars)


def evidence_items(value: Any) -> list[tuple[str, str]]:
    """(title, body) items of one evidence field: passages as dicts, strings or pairs."""
    if isinstance(value, Mapping):
        title = value.get("title") or value.get("name") or ""
        body_keys = [k for k in value if k not in ("title", "name")]
        body = value.get("text") or value.get("paragraph_text") or value.get("content")
        if body is None:
            body = " ".join(as_text(value[k]) for k in body_keys)
        return [(as_text(title), as_text(body))]
    if isinstance(value, list | tuple):
        # HotpotQA's raw context item: [title, [sentence, ...]]
        if (
            len(value) == 2
            and isinstance(value[0], str)
            and isinstance(value[1], list | tuple)
            and all(isinstance(v, str) for v in value[1])
        ):
            return [(value[0], " ".join(value[1]))]
        items: list[tuple[str, str]] = []
        for item in value:
            items.extend(evidence_items(item))
        return items
    return [("", as_text(value))]
