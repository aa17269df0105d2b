"""``Retriever``: BM25 over a per-example corpus field, with a tunable k and, optionally, a
choice of which input field is the search query."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from coalign.component._base import Component
from coalign.errors import ConfigError
from coalign.params import Choice
from coalign.runtime import RunContext

_INDEXES: Any = None  # a coalign.retrieval.BM25Cache, made on first use (bm25s loads lazily)
_INDEXES_LOCK = threading.Lock()


def _index(texts: list[str]) -> Any:
    """The BM25 index of ``texts``, shared across calls: every config, rollout and replayed
    path of a question searches the same paragraphs, and building the index was ~85% of a
    replayed HotpotQA path's time."""
    global _INDEXES
    from coalign.retrieval import BM25Cache

    with _INDEXES_LOCK:
        if _INDEXES is None:
            _INDEXES = BM25Cache(maxsize=4096)
        return _INDEXES.get(texts)


def passage_text(p: Any) -> str:
    if isinstance(p, Mapping):
        return f"{p.get('title', '')}. {p.get('text', '')}"
    return str(p)


class Retriever(Component):
    """Ranks the passages in ``corpus_field`` against the query and keeps the top k.

    ``query_field`` names the input searched with; several names make that a ``query`` choice
    (default: the first), e.g. an LLM-rewritten query or the question as the user asked it.
    """

    def __init__(self, name: str, query_field: str | Sequence[str], corpus_field: str,
                 output: str = "passages", *, ks: Sequence[int] = (1, 3, 5, 10),
                 default_k: int = 3, description: str = "", **kwargs: Any) -> None:
        fields = (query_field,) if isinstance(query_field, str) else tuple(query_field)
        if not fields or len(set(fields)) != len(fields) or corpus_field in fields:
            raise ConfigError(f"retriever {name!r}: query fields {list(fields)} must be distinct, "
                              f"non-empty and differ from the corpus field {corpus_field!r}")
        params: dict[str, Choice] = {"k": Choice(list(ks), default_k, description="passages kept")}
        if len(fields) > 1:
            params["query"] = Choice(list(fields), fields[0],
                                     description="input field used as the search query")
        super().__init__(name, (*fields, corpus_field), (output,), params=params,
                         description=description or f"BM25 top-k passages for the {fields[0]}",
                         **kwargs)
        self.query_fields = fields
        self.corpus_field = corpus_field
        self.output = output

    def forward(self, inputs: dict[str, Any], config: Mapping[str, Any],
                ctx: RunContext) -> dict[str, Any]:
        corpus = list(inputs[self.corpus_field] or [])
        k = self.param_value(config, "k", inputs, ctx)
        field = (self.param_value(config, "query", inputs, ctx) if len(self.query_fields) > 1
                 else self.query_fields[0])
        if not corpus:
            return {self.output: []}
        top = _index([passage_text(p) for p in corpus]).search(str(inputs[field] or ""), k)
        return {self.output: [corpus[i] for i in top]}
