"""The PubMedQA task adapter: yes/no/maybe classification with an LM, as search evaluator and
as the reviewer's task brief.

Quality is dev accuracy, cost is mean tokens (prompt + completion) per question; the engine turns
both into signed fractions against the baseline prompt. Contexts are cut to their last
``context_words`` words (the results part of the abstract sits at the end) because prefill
dominates CPU time.
"""

from __future__ import annotations

from collections.abc import Sequence

from coalign.data import PUBMEDQA_LABELS, Example, extract_label, load_pubmedqa, split
from coalign.lm import LM, LMError, chat
from coalign.search._engine import CandidateFailed, Evaluation
from coalign.search._prompt import Demo, PromptSpec

DESCRIPTION = (
    "PubMedQA: answer a biomedical research question with yes, no or maybe, given an excerpt "
    "of the abstract."
)


def base_spec() -> PromptSpec:
    """The baseline prompt every candidate is measured against (deliberately plain)."""
    return PromptSpec(
        objective="Answer the research question using the context from the abstract.",
        output_format="Reply with one word: yes, no or maybe.",
    )


def tail_words(text: str, n: int) -> str:
    words = text.split()
    return " ".join(words) if len(words) <= n else "... " + " ".join(words[-n:])


def load_sets(
    n_dev: int, n_pool: int, seed: int = 0, path: str | None = None
) -> tuple[list[Example], list[Example]]:
    """A dev set to score prompts on and a disjoint demo pool, from the shared PQA-L train half."""
    dev, pool = split(load_pubmedqa(path), [n_dev, n_pool], seed=seed)
    return dev, pool


class PubMedQATask:
    """Evaluator + task brief for PubMedQA.

    Args:
        lm: the task model (greedy; wrap it in a ``CachedLM`` so a resumed run repeats no call).
        dev: examples the prompts are scored on.
        pool: examples the reviewer may show as demos (disjoint from ``dev``).
        context_words: words of context kept per question.
        demo_context_words: words of context kept in a demo inside the prompt.
        max_tokens: answer budget per question.
    """

    description = DESCRIPTION
    labels: Sequence[str] = PUBMEDQA_LABELS

    def __init__(
        self,
        lm: LM,
        dev: Sequence[Example],
        pool: Sequence[Example],
        context_words: int = 100,
        demo_context_words: int = 40,
        max_tokens: int = 6,
    ) -> None:
        self.lm = lm
        self.dev = list(dev)
        self.pool = list(pool)
        self.context_words = context_words
        self.demo_context_words = demo_context_words
        self.max_tokens = max_tokens
        self._by_id = {ex.id: ex for ex in [*self.dev, *self.pool]}

    def format_input(self, ex: Example, words: int | None = None) -> str:
        context = " ".join(ex.inputs["contexts"])
        return (
            f"Question: {ex.inputs['question']}\n"
            f"Context: {tail_words(context, words or self.context_words)}"
        )

    def evaluate(self, prompt: str) -> Evaluation:
        records, correct, tokens = [], 0, 0
        for ex in self.dev:
            request = chat(self.format_input(ex), system=prompt, max_tokens=self.max_tokens)
            try:
                out = self.lm.generate(request)
            except LMError as exc:
                raise CandidateFailed(f"example {ex.id}: {exc}") from exc
            pred = extract_label(out.text, self.labels) or "none"
            correct += pred == ex.target
            tokens += out.prompt_tokens + out.completion_tokens
            records.append({"id": ex.id, "gold": ex.target, "pred": pred})
        n = max(1, len(self.dev))
        return Evaluation(
            quality=correct / n,
            cost=tokens / n,
            metrics={
                "accuracy": correct / n,
                "tokens_per_example": tokens / n,
                "n": len(self.dev),
                "per_example": records,
            },
        )

    # --- task brief for the reviewer ---------------------------------------------------------
    def example_question(self, example_id: str) -> str:
        return str(self._by_id[example_id].inputs["question"])

    def lookup_demo(self, example_id: str) -> Demo:
        ex = self._by_id[example_id]
        return Demo(ex.id, self.format_input(ex, self.demo_context_words), str(ex.target))

    def demos(self, label: str, k: int, exclude: Sequence[str]) -> list[Demo]:
        skip = set(exclude)
        picked = [ex for ex in self.pool if ex.target == label and ex.id not in skip][:k]
        return [self.lookup_demo(ex.id) for ex in picked]
