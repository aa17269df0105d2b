"""Components: the nodes of a compound system."""

from coalign.component._base import Component, FunctionComponent
from coalign.component._llm import LLMComponent, first_line, render_fields, render_value
from coalign.component._retriever import Retriever, passage_text
from coalign.component._select import Select

_TORCH_EXPORTS = {"PassageReranker": "_reranker", "PolicyComponent": "_policy",
                  "plackett_luce_log_prob": "_reranker", "ItemDecider": "_decider",
                  "EncoderPolicy": "_policy", "FEATURES": "_decider",
                  "named_pick": "_decider", "VectorWeights": "_policy",
                  "linear_weights": "_decider"}


def __getattr__(name: str) -> object:
    # The policy components need torch (seconds to import): load them only when asked for.
    if name in _TORCH_EXPORTS:
        import importlib

        return getattr(importlib.import_module(f"coalign.component.{_TORCH_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'coalign.component' has no attribute {name!r}")


__all__ = ["Component", "EncoderPolicy", "FEATURES", "FunctionComponent", "ItemDecider",
           "LLMComponent", "PassageReranker", "PolicyComponent", "Retriever", "Select",
           "VectorWeights", "first_line", "linear_weights", "named_pick", "passage_text",
           "plackett_luce_log_prob", "render_fields", "render_value"]
