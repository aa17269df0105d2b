"""What every LM backend promises (``lm._base.LM``), as pytest tests.

The contract, from the protocol and the way runs use it:

* it is an ``LM`` with a non-empty ``name`` (part of cache keys and price lookups);
* the same request gets the same answer: greedy always, and a temperature sample per
  ``sample_index`` (the request is the complete cache key, so a run replays exactly);
* usage is counted: prompt and completion tokens, the model that answered, a latency;
* a failure is an ``LMError`` with a one-line message, never an answer, and the backend
  answers the next request as before;
* it is safe to call from several threads: each thread gets the answer a serial call gets.

A test file subclasses ``LMContract`` and provides a ``case`` fixture returning an ``LMCase``
(closing the backend after the test). A backend that answers only recorded requests (the
replay table) records ``REQUESTS`` first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from coalign.lm import LM, LMError, LMRequest, LMResponse, chat

GREEDY = chat("Name one colour.", system="Answer in one word.", max_tokens=8)
SAMPLES = tuple(chat("Name one colour.", max_tokens=8, temperature=0.9, sample_index=i)
                for i in range(3))
PARALLEL = tuple(chat(f"Count to {i}.", max_tokens=8) for i in range(4))
REQUESTS: tuple[LMRequest, ...] = (GREEDY, *SAMPLES, *PARALLEL)  # every request answered


@dataclass(frozen=True)
class LMCase:
    """A backend under test and how to make it fail."""

    id: str
    lm: LM
    failing: Callable[[], LMRequest]  # arranges a failure; returns the request that meets it


def _same(a: LMResponse, b: LMResponse) -> bool:
    return (a.text, a.prompt_tokens, a.completion_tokens, a.model) == (
        b.text, b.prompt_tokens, b.completion_tokens, b.model)


class LMContract:
    """Subclass it and provide a ``case`` fixture returning an ``LMCase``."""

    @pytest.fixture
    def case(self) -> LMCase:
        raise NotImplementedError("provide a `case` fixture returning an LMCase")

    def test_is_an_lm_with_a_name(self, case: LMCase) -> None:
        assert isinstance(case.lm, LM)
        assert isinstance(case.lm.name, str) and case.lm.name

    def test_same_greedy_request_same_answer(self, case: LMCase) -> None:
        first = case.lm.generate(GREEDY)
        assert _same(case.lm.generate(GREEDY), first)

    def test_samples_reproduce_by_sample_index(self, case: LMCase) -> None:
        first = [case.lm.generate(r) for r in SAMPLES]
        again = [case.lm.generate(r) for r in SAMPLES]
        assert all(_same(a, b) for a, b in zip(first, again, strict=True))

    def test_usage_is_counted(self, case: LMCase) -> None:
        out = case.lm.generate(GREEDY)
        assert isinstance(out.text, str) and out.model
        assert out.prompt_tokens > 0 and out.completion_tokens >= (1 if out.text else 0)
        assert out.latency_s >= 0

    def test_a_failure_is_a_one_line_lm_error(self, case: LMCase) -> None:
        with pytest.raises(LMError) as err:
            case.lm.generate(case.failing())
        message = str(err.value)
        assert message.strip() and "\n" not in message

    def test_it_answers_as_before_after_a_failure(self, case: LMCase) -> None:
        before = case.lm.generate(GREEDY)
        with pytest.raises(LMError):
            case.lm.generate(case.failing())
        assert _same(case.lm.generate(GREEDY), before)

    def test_threads_get_the_serial_answers(self, case: LMCase) -> None:
        serial = [case.lm.generate(r).text for r in PARALLEL]
        out: dict[int, str] = {}

        def call(i: int) -> None:
            out[i] = case.lm.generate(PARALLEL[i]).text

        threads = [threading.Thread(target=call, args=(i,)) for i in range(len(PARALLEL))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [out.get(i) for i in range(len(PARALLEL))] == serial
