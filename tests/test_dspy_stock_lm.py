"""coalign.dspy.optimize on a user's own DSPy LMs (not a CoalignLM): a legacy ``dspy.BaseLM``
subclass and a ``dspy.LM`` whose calls DSPy's cache answers. Fast: in-test LMs that reply in
ChatAdapter's format (tests/test_dspy_stock_lm_llm.py runs a stock LM on a real server)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("dspy")

import dspy  # noqa: E402
from dspy.clients.cache import Cache  # noqa: E402
from dspy.lm15 import Message, Response, TextPart, Usage  # noqa: E402

from coalign.dspy import optimize  # noqa: E402
from coalign.errors import ConfigError  # noqa: E402

BUDGET = {"iterations": 2, "search_size": 2, "fresh_inputs": 1, "rollout_n": 2,
          "text_candidates": 2, "text_steps": 1, "text_alternatives": 2}


def reply(messages: list[dict]) -> str:
    """The answer is the question's last word once the instruction asks for a short answer,
    else (odd questions) a longer phrase: an edit of the instruction can win."""
    system, last = messages[0]["content"], messages[-1]["content"]
    word = re.search(r"\[\[ ## question ## \]\]\n.*?(\w+)\?", last, re.S).group(1)
    short = "only" in system or "concise" in system.lower() or int(word[1:]) % 2 == 0
    return f"[[ ## answer ## ]]\n{word if short else 'maybe ' + word}\n\n[[ ## completed ## ]]"


class Fixed(dspy.BaseLM):
    """A stock legacy ``BaseLM``: ``forward`` returns an OpenAI-shaped response."""

    def __init__(self) -> None:
        super().__init__("fixed/model")
        self.calls: list[dict] = []

    def forward(self, prompt=None, messages=None, **kwargs):
        self.calls.append(kwargs)
        return {"model": self.model, "usage": {"prompt_tokens": 11, "completion_tokens": 3},
                "choices": [{"message": {"content": reply(messages)}, "finish_reason": "stop"}]}


class Engine:
    """A custom engine behind a plain ``dspy.LM``: DSPy caches its responses."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request):
        self.calls += 1
        messages = [{"role": "system", "content": request.system}] + \
            [{"role": m.role, "content": m.text} for m in request.messages]
        return Response(id=None, model=request.model, finish_reason="stop",
                        usage=Usage(input_tokens=7, output_tokens=2),
                        message=Message.assistant([TextPart(reply(messages))]))


class QA(dspy.Module):
    def __init__(self) -> None:
        super().__init__()
        self.answer = dspy.Predict("question -> answer")

    def forward(self, question):
        return self.answer(question=question)


def exact(example, pred, trace=None):
    return example.answer == pred.answer


def data(lo, hi):
    return [dspy.Example(question=f"what is w{i}?", answer=f"w{i}").with_inputs("question")
            for i in range(lo, hi)]


@pytest.fixture
def memory_cache(monkeypatch):
    """DSPy's cache in memory only, for this test (the user's disk cache stays untouched)."""
    monkeypatch.setattr(dspy, "cache", Cache(False, True, None), raising=False)


def test_a_stock_base_lm_subclass_is_optimized_through_its_own_forward(tmp_path):
    lm = Fixed()
    program = QA()
    seen: list[tuple[str, int, int]] = []
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        result = optimize(program, data(0, 6), exact, valset=data(6, 12), budget=BUDGET,
                          run_dir=tmp_path / "run", backbone="hashing",
                          progress=lambda *report: seen.append(report))
    # progress per input of each long phase, then per step
    assert ("validating the current config", 1, 6) in seen
    assert any(phase.startswith("rollouts") for phase, _, _ in seen)
    assert [r for r in seen if r[0] == "steps"] == [("steps", 1, 2), ("steps", 2, 2)]
    assert result.val_before == pytest.approx(0.5) and result.val_after >= result.val_before
    assert len(result.history) == 2
    # every call went through the user's LM and is in the ledger (it never caches)
    ledger = result.ledger
    assert sum(ledger.llm_calls.values()) == len(lm.calls) > 0
    assert sum(ledger.cache_hits.values()) == 0
    # rollouts sample: temperature and DSPy's rollout_id reach the LM, greedy calls keep its own
    sampled = [c for c in lm.calls if c.get("rollout_id") is not None]
    assert sampled and all(c["temperature"] > 0 for c in sampled)
    assert {c["rollout_id"] for c in sampled} == {0, 1}
    assert any(c.get("temperature") is None for c in lm.calls)
    with dspy.context(lm=lm):
        assert dspy.Evaluate(devset=data(6, 8), metric=exact)(program).score >= 50.0


def test_a_caching_dspy_lm_is_answered_by_dspys_cache_on_a_repeated_run(tmp_path,
                                                                         memory_cache):
    engine = Engine()
    lm = dspy.LM("custom/model", engine=engine)  # cache=True: DSPy's default
    kw = dict(valset=data(6, 10), budget=BUDGET, lm=lm, backbone="hashing")
    with dspy.context(adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        first = optimize(QA(), data(0, 6), exact, run_dir=tmp_path / "a", **kw)
        served, hits = engine.calls, sum(first.ledger.cache_hits.values())
        assert sum(first.ledger.llm_calls.values()) == served > 0
        assert hits > 0  # a request repeated within the run: answered by DSPy's cache
        # a fresh run dir: coalign's ledger starts over, DSPy's cache answers every request
        again = optimize(QA(), data(0, 6), exact, run_dir=tmp_path / "b", **kw)
    assert engine.calls == served
    assert sum(again.ledger.llm_calls.values()) == 0
    assert sum(again.ledger.cache_hits.values()) == served + hits
    assert again.config.digest == first.config.digest
    assert len(lm.history) == 2 * (served + hits)  # DSPy's own history on the user's LM


def test_an_lm_that_never_keeps_the_format_is_one_clear_error(tmp_path):
    class Chatty(Fixed):
        def forward(self, prompt=None, messages=None, **kwargs):
            out = super().forward(prompt, messages, **kwargs)
            out["choices"][0]["message"]["content"] = "The answer is probably w1."
            return out

    with pytest.raises(ConfigError, match=r"^model dspy:fixed/model: no reply on the 2 "
                                          r"validation examples followed DSPy's output format"):
        optimize(QA(), data(0, 2), exact, valset=data(2, 4), lm=Chatty(), budget=1,
                 run_dir=tmp_path / "run", backbone="hashing")
