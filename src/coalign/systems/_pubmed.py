"""``pubmedqa_select``: evidence summarizer -> answerer with a per-question model choice.

The answerer's model is a per-instance ``Choice`` between the cheap SmolLM2-135M and the stronger
Qwen2.5-0.5B: the local reward decides per question whether the strong model is worth its cost.
"""

from __future__ import annotations

from coalign.component import LLMComponent
from coalign.data import extract_label, get_metric
from coalign.params import Choice
from coalign.system import System
from coalign.task import Task

SUMMARIZE = ("Summarize the study results that answer the question in one or two sentences. "
             "Keep numbers and the direction of effects.")
DECIDE = "Answer the research question with exactly one word: yes, no, or maybe."


def pubmedqa_select(model: str = "qwen2.5-0.5b", cheap: str = "smollm2-135m") -> Task:
    components = [
        LLMComponent("summarizer", ["question", "contexts"], "findings", SUMMARIZE, model=model,
                     max_tokens=64, field_limit=1500,
                     description="summarizes the abstract's findings for the question"),
        LLMComponent("answerer", ["question", "findings"], "answer", DECIDE,
                     model=Choice([cheap, model], cheap, scope="per_instance",
                                  description="model that answers this question"),
                     max_tokens=4, parse=lambda t: extract_label(t) or t.strip().lower(),
                     description="answers yes, no or maybe from the findings"),
    ]
    system = System("pubmedqa_select", components, inputs=["question", "contexts"],
                    output="answer")
    return Task(system, get_metric("accuracy"), "accuracy")
