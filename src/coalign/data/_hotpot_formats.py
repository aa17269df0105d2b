"""HotpotQA-style rows in the formats they are published in, read into one ``Example`` shape.

Told apart per row by their fields:

* ``unified`` (the shared ``hotpotqa_dev_unified.jsonl``): ``id``, ``context: [{title, text,
  is_supporting}]``;
* ``official`` (``hotpot_dev_distractor_v1.json``, also 2WikiMultiHopQA): ``_id``,
  ``context: [[title, [sentence, ...]], ...]``, ``supporting_facts: [[title, sent_id], ...]``;
* ``hf`` (Hugging Face ``hotpot_qa`` exported to JSONL): ``id``, ``context: {title: [...],
  sentences: [[...], ...]}``, ``supporting_facts: {title: [...], sent_id: [...]}``;
* ``ircot``: ``question_id``, ``question_text``, ``answers_objects``, ``contexts: [{title,
  paragraph_text, is_supporting}]``;
* ``flashrag``: ``id``, ``question``, ``golden_answers``, ``metadata: {context,
  supporting_facts, type, level}`` (the hf shapes).

A paragraph's text is its sentences joined, as HotpotQA's own paragraph-level tools do.
"""

from __future__ import annotations

from typing import Any

from coalign.data._base import Example
from coalign.data._io import Fields

__all__ = ["hotpot_example"]


def hotpot_example(row: Fields, obj: dict[str, Any]) -> Example:
    """One row of any supported format (see the module docstring) as an ``Example``."""
    if "question_text" in obj:
        return _ircot(row)
    if "golden_answers" in obj:
        meta = row.sub("metadata")
        paragraphs, supporting = _hf_context(meta)
        answers = row.strings("golden_answers", nonempty=True)
        return _example(row.text("id"), row.text("question"), answers[0], answers[1:],
                        paragraphs, supporting, meta)
    context = obj.get("context")
    if isinstance(context, dict):
        paragraphs, supporting = _hf_context(row)
    elif isinstance(context, list) and context and isinstance(context[0], list):
        paragraphs, supporting = _official_context(row)
    else:
        paragraphs, supporting = _unified_context(row)
    ident = row.text("_id") if "_id" in obj else row.text("id")
    return _example(ident, row.text("question"), row.text("answer"),
                    row.strings("answer_aliases", optional=True), paragraphs, supporting, row)


def _example(ident: str, question: str, answer: str, aliases: list[str],
             paragraphs: list[dict[str, str]], supporting: list[str], row: Fields) -> Example:
    meta: dict[str, Any] = {"supporting_titles": supporting,
                            "type": row.get("type", str, optional=True),
                            "level": row.get("level", str, optional=True)}
    if aliases:
        meta["answer_aliases"] = aliases
    return Example(id=ident, inputs={"question": question, "paragraphs": paragraphs},
                   target=answer, meta=meta)


def _unified_context(row: Fields) -> tuple[list[dict[str, str]], list[str]]:
    paragraphs, supporting = [], []
    for par in row.items("context"):
        title, text = par.text("title"), par.get("text", str)
        paragraphs.append({"title": title, "text": text})
        if par.get("is_supporting", bool):
            supporting.append(title)
    return paragraphs, supporting


def _official_context(row: Fields) -> tuple[list[dict[str, str]], list[str]]:
    titles = []
    paragraphs = []
    for i, pair in enumerate(row.get("context", list)):
        if (not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str)
                or not isinstance(pair[1], list) or not all(isinstance(s, str) for s in pair[1])):
            raise row.fail(f"context[{i}]", "must be [title, [sentence, ...]]")
        titles.append(pair[0])
        paragraphs.append({"title": pair[0], "text": "".join(pair[1])})
    facts = row.get("supporting_facts", list, optional=True) or []
    named = set()
    for i, fact in enumerate(facts):
        if not isinstance(fact, list) or not fact or not isinstance(fact[0], str):
            raise row.fail(f"supporting_facts[{i}]", "must be [title, sentence index]")
        named.add(fact[0])
    return paragraphs, [t for t in titles if t in named]


def _hf_context(row: Fields) -> tuple[list[dict[str, str]], list[str]]:
    context = row.sub("context")
    titles = context.strings("title")
    sentences = context.get("sentences", list)
    if len(sentences) != len(titles):
        raise row.fail("context", f"has {len(titles)} titles but {len(sentences)} sentence lists")
    paragraphs = []
    for i, (title, sents) in enumerate(zip(titles, sentences, strict=True)):
        if not isinstance(sents, list) or not all(isinstance(s, str) for s in sents):
            raise row.fail(f"context.sentences[{i}]", "must be a list of strings")
        paragraphs.append({"title": title, "text": "".join(sents)})
    named = (set(row.sub("supporting_facts").strings("title", optional=True))
             if row.get("supporting_facts", dict, optional=True) else set())
    return paragraphs, [t for t in titles if t in named]


def _ircot(row: Fields) -> Example:
    paragraphs, supporting = [], []
    for par in row.items("contexts"):
        title, text = par.text("title"), par.get("paragraph_text", str)
        paragraphs.append({"title": title, "text": text})
        if par.get("is_supporting", bool, optional=True):
            supporting.append(title)
    answers = [s for a in row.items("answers_objects") for s in a.strings("spans")]
    if not answers:
        raise row.fail("answers_objects", "has no answer span")
    return _example(row.text("question_id"), row.text("question_text"), answers[0], answers[1:],
                    paragraphs, supporting, row)
