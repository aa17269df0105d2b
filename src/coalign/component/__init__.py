"""Components: the nodes of a compound system."""

from coalign.component._base import Component, FunctionComponent
from coalign.component._llm import LLMComponent, first_line, render_fields, render_value
from coalign.component._retriever import Retriever
from coalign.component._select import Select

_TORCH_EXPORTS = ("PassageReranker", "PolicyComponent", "plackett_luce_log_prob")


def __getattr__(name: str) -> object:
    # The reranker needs torch (seconds to import): load it only when asked for.
    if name in _TORCH_EXPORTS:
        from coalign.component import _reranker

        return getattr(_reranker, name)
    raise AttributeError(f"module 'coalign.component' has no attribute {name!r}")


__all__ = ["Component", "FunctionComponent", "LLMComponent", "PassageReranker", "PolicyComponent",
           "Retriever", "Select", "first_line", "plackett_luce_log_prob", "render_fields",
           "render_value"]
