"""``next_item``: session analyzer -> candidate profiler -> trainable decider.

The reference's recommendation system on the Amazon session data
(``coalign.data.load_amazon_sessions``): the session analyzer describes what the shopper is
after from the products they clicked; the candidate profiler reads that description and the
numbered candidates and names the best one; the decider (``ItemDecider``, a ``Weights`` param
trained by the loop's weights optimizer against its local reward, where the reference trains
its models with PPO) scores every candidate from the profiler's pick and embedding similarities
and picks one. Scored by accuracy of the picked index.
"""

from __future__ import annotations

from typing import Any

from coalign.component import LLMComponent
from coalign.data import get_metric
from coalign.params import Choice
from coalign.system import System
from coalign.systems._model_choice import model_param
from coalign.task import Task

ANALYZE = ("From the products this shopper clicked, describe in one short sentence the kind of "
           "product they are looking for next.")
PROFILE = ("Which numbered candidate best fits what the shopper is looking for? Reply with its "
           "number first, then at most ten words why.")


def next_item(model: str = "qwen2.5-0.5b", *, decider_backbone: Any = None, hidden: int = 0,
              layout: str = "instruction_first", models: tuple[str, ...] | None = None,
              model_scope: str = "global") -> Task:
    """Next-item selection over a user's session, scored by accuracy.

    ``decider_backbone`` shares an encoder with the decider (e.g. the LRF's); default: the
    bundled MiniLM, loaded on first use. ``hidden``: width of the decider's hidden layer.
    ``models``: each LLM component chooses its model among these (``model_param``).
    """
    from coalign.component import ItemDecider  # torch: imported only when used

    def pick() -> str | Choice:  # a param object of its own for each component
        return model_param(model, models, model_scope)

    components = [
        LLMComponent("session_analyzer", ["session"], "interests", ANALYZE, model=pick(),
                     max_tokens=40, field_limit=1600, layout=layout,
                     description="describes what the shopper is after from the session"),
        LLMComponent("candidate_profiler", ["interests", "choices"], "assessment", PROFILE,
                     model=pick(), max_tokens=24, field_limit=1200, layout=layout,
                     description="names the candidate that best fits the shopper"),
        ItemDecider("next_item_decider", backbone=decider_backbone, hidden=hidden,
                    description="picks the next item from the profiler's pick and similarities"),
    ]
    system = System("next_item", components, inputs=["session", "choices"], output="choice")
    return Task(system, get_metric("accuracy"), "accuracy")
