"""Systems by name (for the CLI and run configs) and the model names a task uses."""

from __future__ import annotations

from collections.abc import Callable

from coalign.systems._code import code_gen, code_gen_single
from coalign.systems._multihop import multihop_qa
from coalign.systems._next_item import next_item
from coalign.systems._pubmed import pubmedqa_select
from coalign.task import Task

# Each takes the task model and keyword options; those in MODEL_CHOICE take ``models=`` (a
# model choice per LLM component, ``coalign.systems._model_choice``).
SYSTEMS: dict[str, Callable[..., Task]] = {
    "multihop_qa": lambda model, **kw: multihop_qa(model, **kw),
    "multihop_qa_rerank": lambda model, **kw: multihop_qa(model, reranker=True, **kw),
    "pubmedqa_select": lambda model: pubmedqa_select(model),
    "code_gen": lambda model, **kw: code_gen(model, **kw),
    "code_gen_single": lambda model, **kw: code_gen_single(model, **kw),
    "next_item": lambda model, **kw: next_item(model, **kw),
}
MODEL_CHOICE = frozenset({"multihop_qa", "multihop_qa_rerank", "code_gen", "code_gen_single",
                          "next_item"})


def models_of(task: Task) -> list[str]:
    """Every model name the task's LLM components may call."""
    names: set[str] = set()
    for comp in task.system.components:
        model = getattr(comp, "model", None)
        if isinstance(model, str):
            names.add(model)
        elif model is not None:
            names.update(model.options)
    return sorted(names)
