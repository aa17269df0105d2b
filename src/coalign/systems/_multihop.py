"""``multihop_qa``: question rewriter -> BM25 retriever -> [reranker] -> extractor -> answer."""

from __future__ import annotations

from typing import Any

from coalign.component import LLMComponent, Retriever
from coalign.data import get_metric
from coalign.errors import ConfigError
from coalign.params import Choice
from coalign.system import System
from coalign.systems._grounded import GroundedAnswer
from coalign.systems._model_choice import model_param
from coalign.task import Task

REWRITE = ("Rewrite the question as a short keyword search query that names the entities it asks "
           "about. Reply with only the query.")
EXTRACT = ("Using only the passages, write the one or two facts needed to answer the question. "
           "Be brief.")
ANSWER = "Answer the question using the facts. Reply with only the short answer, no sentence."


def multihop_qa(model: str = "qwen2.5-0.5b", *, ks: tuple[int, ...] = (1, 3, 5, 10),
                default_k: int = 3, answer_models: tuple[str, ...] | None = None,
                reranker: bool = False, rerank_pool: int = 10,
                reranker_backbone: Any = None,
                query_sources: tuple[str, ...] = ("query",),
                layout: str = "instruction_first", models: tuple[str, ...] | None = None,
                model_scope: str = "global") -> Task:
    """The reference's HotpotQA pipeline shape, scored by answer F1.

    ``query_sources``: the fields the retriever searches with; two or more make it a choice
    (the first by default), e.g. ``("query", "question")``: the rewriter's query or the question
    as asked. Not a default knob: on 300 HotpotQA questions BM25 finds both gold paragraphs in
    its top 3 for 58% of them from the question and 43% from the 0.5B rewriter's query, yet
    answer F1 went from 0.360 to 0.399 on 100 validation questions and from 0.433 to 0.389 on
    200 test questions (paired interval -0.099 to +0.009): a validation gate would accept it.

    ``layout``: where the LLM components put their instruction (see ``LLMComponent``);
    replay tables use ``"inputs_first"``.

    ``answer_models`` turns the answer generator's model into a per-instance choice
    (cheap vs strong) instead of the fixed ``model``. ``models``: every LLM component chooses
    its model among these (``model_param``; ``answer_models`` still decides the answer
    generator's).

    ``reranker`` inserts a trainable ``PassageReranker`` (a ``Weights`` param) after the
    retriever: the retriever then fetches ``rerank_pool`` passages by default (its k stays a
    choice) and the reranker keeps the best ``default_k``. Untrained, the reranker keeps BM25's
    order, so the unoptimized system answers exactly as without it. ``reranker_backbone`` shares
    an encoder (e.g. the LRF's); default: the bundled MiniLM, loaded on first use.
    """
    if reranker and rerank_pool not in ks:
        raise ConfigError(f"multihop_qa: rerank_pool {rerank_pool} must be one of ks {list(ks)}")
    retrieved = "candidates" if reranker else "passages"
    def pick() -> str | Choice:  # a param object of its own for each component
        return model_param(model, models, model_scope)

    answer_model: str | Choice = pick()
    if answer_models:
        answer_model = Choice(list(answer_models), answer_models[0], scope="per_instance",
                              description="model answering this question")
    components = [
        LLMComponent("question_rewriter", ["question"], "query", REWRITE, model=pick(),
                     max_tokens=32, layout=layout,
                     description="rewrites the question into a search query"),
        Retriever("retriever", query_sources, "paragraphs", retrieved, ks=ks,
                  default_k=rerank_pool if reranker else default_k,
                  description="BM25 top-k of the question's paragraphs for the query"),
        LLMComponent("info_extractor", ["question", "passages"], "info", EXTRACT, model=pick(),
                     max_tokens=64, field_limit=2400, layout=layout,
                     description="extracts the facts that answer the question from passages"),
        LLMComponent("answer_generator", ["question", "info"], "answer", ANSWER,
                     model=answer_model, max_tokens=16, layout=layout,
                     description="writes the short final answer from the facts",
                     checks=(GroundedAnswer("answer", "passages"),)),
    ]
    if reranker:
        from coalign.component import PassageReranker  # torch: imported only when used

        components.insert(2, PassageReranker(
            "reranker", "question", retrieved, "passages", keep=default_k,
            backbone=reranker_backbone,
            description="reorders the retrieved passages so those that answer the question come "
                        "first; keeps the top ones"))
    system = System("multihop_qa", components, inputs=["question", "paragraphs"], output="answer")
    return Task(system, get_metric("f1"), "f1")
