"""A stock ``dspy.LM("openai/...")`` pointed at a real local OpenAI-compatible server
(llama-cpp-python's, on the bundled SmolLM2-135M) optimized end to end by coalign.dspy.optimize:
its calls go through the user's LM object, land in coalign's ledger, and DSPy's cache answers
a repeated request. Marked like the other server tests."""

from __future__ import annotations

import pytest

pytest.importorskip("dspy")

import dspy  # noqa: E402
from dspy.clients.cache import Cache  # noqa: E402
from dspy.utils.exceptions import AdapterParseError  # noqa: E402

from coalign.dspy import optimize  # noqa: E402
from tests.test_lm_llamacpp_server import llama_server  # noqa: E402, F401  (the fixture)

pytestmark = [pytest.mark.server, pytest.mark.llm]
BUDGET = {"iterations": 1, "search_size": 2, "fresh_inputs": 1, "rollout_n": 0,
          "text_alternatives": 2, "text_candidates": 2, "text_steps": 1}
FACTS = [("What is the capital of France?", "Paris"), ("What color is the sky?", "blue"),
         ("What is the capital of Italy?", "Rome"), ("How many legs does a dog have?", "four")]


class Lenient(dspy.ChatAdapter):
    """SmolLM2-135M seldom keeps ChatAdapter's field markers: a reply without them is read as
    the single output field (a user's own adapter, as DSPy allows)."""

    def parse(self, signature, completion):
        try:
            return super().parse(signature, completion)
        except AdapterParseError:
            (field,) = signature.output_fields
            return {field: completion.strip()}


class QA(dspy.Module):
    def __init__(self) -> None:
        super().__init__()
        self.answer = dspy.Predict("question -> answer")

    def forward(self, question):
        return self.answer(question=question)


def contains(example, pred, trace=None):
    return float(example.answer.lower() in str(pred.answer or "").lower())


def examples(rows):
    return [dspy.Example(question=q, answer=a).with_inputs("question") for q, a in rows]


def served(entries):
    """(calls the server answered, calls DSPy's cache answered) among history entries."""
    live = sum(bool(e["usage"]) for e in entries)
    return live, len(entries) - live


def test_a_stock_openai_lm_on_a_local_server_is_optimized_end_to_end(llama_server,  # noqa: F811
                                                                      tmp_path, monkeypatch):
    monkeypatch.setattr(dspy, "cache", Cache(False, True, None), raising=False)  # memory only
    lm = dspy.LM("openai/smollm2", api_base=llama_server, api_key="local", temperature=0.0,
                 max_tokens=16, num_retries=1)
    program = QA()
    train, val = examples(FACTS[:2]), examples(FACTS[2:])
    with dspy.context(lm=lm, adapter=Lenient(use_json_adapter_fallback=False)):
        result = optimize(program, train, contains, valset=val, budget=BUDGET,
                          run_dir=tmp_path / "run", backbone="hashing")
        assert len(result.history) == 1 and result.history[0].val_after is not None
        assert 0.0 <= result.val_before <= result.val_after <= 1.0
        # every call of the run went through the user's LM; the ledger counted each one
        live, hits = served(lm.history)
        assert live > 0
        assert sum(result.ledger.llm_calls.values()) == live
        assert sum(result.ledger.cache_hits.values()) == hits
        # the optimized program evaluates; its validation requests repeat the run's own,
        # so DSPy's cache answers them and the server is not asked again
        n = len(lm.history)
        score = dspy.Evaluate(devset=val, metric=contains, num_threads=1)(program).score
    assert score == pytest.approx(100 * result.val_after)
    assert served(lm.history[n:]) == (0, len(val))
