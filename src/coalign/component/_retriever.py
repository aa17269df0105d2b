"""``Retriever``: BM25 over a per-example corpus field, with a tunable k."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coalign.component._base import Component
from coalign.params import Choice
from coalign.runtime import RunContext


def passage_text(p: Any) -> str:
    if isinstance(p, Mapping):
        return f"{p.get('title', '')}. {p.get('text', '')}"
    return str(p)


class Retriever(Component):
    """Ranks the passages in ``corpus_field`` against ``query_field`` and keeps the top k."""

    def __init__(self, name: str, query_field: str, corpus_field: str, output: str = "passages",
                 *, ks: Sequence[int] = (1, 3, 5, 10), default_k: int = 3,
                 description: str = "", **kwargs: Any) -> None:
        super().__init__(name, (query_field, corpus_field), (output,),
                         params={"k": Choice(list(ks), default_k, description="passages kept")},
                         description=description or f"BM25 top-k passages for the {query_field}",
                         **kwargs)
        self.query_field = query_field
        self.corpus_field = corpus_field
        self.output = output

    def forward(self, inputs: dict[str, Any], config: Mapping[str, Any],
                ctx: RunContext) -> dict[str, Any]:
        from coalign.retrieval import BM25Index

        corpus = list(inputs[self.corpus_field] or [])
        k = self.param_value(config, "k", inputs, ctx)
        if not corpus:
            return {self.output: []}
        index = BM25Index([passage_text(p) for p in corpus])
        top = index.search(str(inputs[self.query_field] or ""), k)
        return {self.output: [corpus[i] for i in top]}
