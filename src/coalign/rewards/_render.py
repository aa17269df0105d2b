"""Render (component description, x_k, y_k) as one text for the backbone encoder.

The encoder (MiniLM) reads only the first 256 word pieces, so the layout puts what decides the
reward where it survives truncation: the output first, then the short query fields, then the
evidence the component worked from, each passage shown as its title plus the sentences that share
most words with the output and the question.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coalign.rewards._text import (
    as_text,
    best_sentences,
    clip,
    evidence_items,
    split_fields,
    split_inputs,
    tokens,
    values_text,
)


@dataclass(frozen=True)
class RenderBudget:
    """Character budgets (≈ 4 characters per word piece; 256 pieces ≈ 1,000 characters)."""

    description: int = 120
    output: int = 360
    query: int = 240
    evidence: int = 420
    max_passages: int = 6


DEFAULT_BUDGET = RenderBudget()


def _fields(values: Mapping[str, Any], max_chars: int) -> str:
    """``key: value`` pieces sharing ``max_chars`` (an empty value is shown as <empty>)."""
    if not values:
        return "<none>"
    share = max(24, max_chars // len(values))
    parts = []
    for key, value in values.items():
        text = as_text(value).strip()
        parts.append(f"{key}: {clip(text, share) if text else '<empty>'}")
    return " | ".join(parts)


def _items(fields: Mapping[str, Any]) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    for value in fields.values():
        items.extend(evidence_items(value))
    return items


def _evidence(
    evidence: Mapping[str, Any],
    focus: set[str],
    max_chars: int,
    max_passages: int,
    skip: frozenset[tuple[str, str]] = frozenset(),
) -> str:
    items = [item for item in _items(evidence) if item not in skip]
    if not items:
        return ""
    shown = items[:max_passages]
    share = max(40, max_chars // len(shown))
    pieces = []
    for i, (title, body) in enumerate(shown, 1):
        head = f"[{i}] {clip(title, 40)}: " if title else f"[{i}] "
        pieces.append(head + best_sentences(body, focus, max(16, share - len(head))))
    more = len(items) - len(shown)
    tail = f" (+{more} more)" if more > 0 else ""
    return " ".join(pieces) + tail


def render_sections(
    description: str,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    budget: RenderBudget = DEFAULT_BUDGET,
) -> dict[str, str]:
    """The rendered pieces by name: description, output, query, evidence (may be empty)."""
    query, evidence = split_inputs(inputs)
    short_out, long_out = split_fields(outputs)
    query_focus = set(tokens(values_text(query)))
    focus = set(tokens(values_text(outputs))) | query_focus
    out = _fields(short_out, budget.output) if short_out or not long_out else ""
    if long_out:  # e.g. a retriever's passages: title + the sentences nearest the question
        compact = _evidence(long_out, query_focus, budget.output, budget.max_passages)
        out = f"{out} | {compact}" if out else compact
    return {
        "description": clip(description, budget.description),
        "output": out,
        "query": _fields(query, budget.query),
        # evidence the output already repeats (a retriever's picks) is not shown twice, so what
        # was left out is what the encoder sees
        "evidence": _evidence(
            evidence, focus, budget.evidence, budget.max_passages, frozenset(_items(long_out))
        ),
    }


def render(
    description: str,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    budget: RenderBudget = DEFAULT_BUDGET,
) -> str:
    """One line of text: component description, output, query fields, evidence snippets.

    Args:
        description: the component's one-line description (what it is for).
        inputs: the component's input fields x_k.
        outputs: the component's output fields y_k.
        budget: character budgets per section.

    Returns:
        ``"<description> || output: … || query: … || evidence: …"`` (evidence omitted when the
        inputs have none).
    """
    parts = render_sections(description, inputs, outputs, budget)
    sections = [parts["description"], f"output: {parts['output']}", f"query: {parts['query']}"]
    if parts["evidence"]:
        sections.append(f"evidence: {parts['evidence']}")
    return " || ".join(sections)
