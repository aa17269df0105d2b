"""``multihop_qa``: question rewriter -> BM25 retriever -> info extractor -> answer generator."""

from __future__ import annotations

from coalign.component import LLMComponent, Retriever
from coalign.data import get_metric
from coalign.params import Choice
from coalign.system import System
from coalign.task import Task

REWRITE = ("Rewrite the question as a short keyword search query that names the entities it asks "
           "about. Reply with only the query.")
EXTRACT = ("Using only the passages, write the one or two facts needed to answer the question. "
           "Be brief.")
ANSWER = "Answer the question using the facts. Reply with only the short answer, no sentence."


def multihop_qa(model: str = "qwen2.5-0.5b", *, ks: tuple[int, ...] = (1, 3, 5, 10),
                default_k: int = 3, answer_models: tuple[str, ...] | None = None) -> Task:
    """The reference's HotpotQA pipeline shape, scored by answer F1.

    ``answer_models`` turns the answer generator's model into a per-instance choice
    (cheap vs strong) instead of the fixed ``model``.
    """
    answer_model: str | Choice = model
    if answer_models:
        answer_model = Choice(list(answer_models), answer_models[0], scope="per_instance",
                              description="model answering this question")
    components = [
        LLMComponent("question_rewriter", ["question"], "query", REWRITE, model=model,
                     max_tokens=32, description="rewrites the question into a search query"),
        Retriever("retriever", "query", "paragraphs", "passages", ks=ks, default_k=default_k,
                  description="BM25 top-k of the question's paragraphs for the query"),
        LLMComponent("info_extractor", ["question", "passages"], "info", EXTRACT, model=model,
                     max_tokens=64, field_limit=2400,
                     description="extracts the facts that answer the question from passages"),
        LLMComponent("answer_generator", ["question", "info"], "answer", ANSWER,
                     model=answer_model, max_tokens=16,
                     description="writes the short final answer from the facts"),
    ]
    system = System("multihop_qa", components, inputs=["question", "paragraphs"], output="answer")
    return Task(system, get_metric("f1"), "f1")
