"""Components: the nodes of a compound system."""

from coalign.component._base import Component, FunctionComponent
from coalign.component._llm import LLMComponent, first_line, render_fields, render_value
from coalign.component._retriever import Retriever
from coalign.component._select import Select

__all__ = ["Component", "FunctionComponent", "LLMComponent", "Retriever", "Select", "first_line",
           "render_fields", "render_value"]
