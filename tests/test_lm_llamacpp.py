"""LlamaCpp with the real bundled models (marked ``llm``: they load GGUF files)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from coalign.lm import LlamaCpp, LMError, ModelPool, chat

pytestmark = pytest.mark.llm

POEM = chat("Write one sentence about the sea.", max_tokens=12)


@pytest.fixture(scope="module")
def pool() -> Iterator[ModelPool]:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed")
    pool = ModelPool()
    yield pool
    pool.clear()


@pytest.fixture(scope="module")
def smol(pool) -> LlamaCpp:
    return LlamaCpp("smollm2-135m", n_ctx=512, pool=pool)


def test_greedy_is_deterministic_and_reports_usage(smol, pool):
    a = smol.generate(POEM)
    b = LlamaCpp("smollm2-135m", n_ctx=512, pool=pool).generate(POEM)  # shares the model
    assert a.text == b.text and a.text.strip()
    assert a.prompt_tokens > 5 and 0 < a.completion_tokens <= 12
    assert a.latency_s > 0 and a.model == "smollm2-135m" and a.extra["local"] is True
    assert len(pool.loaded()) == 1


def test_greedy_survives_a_reload(smol):
    expected = smol.generate(POEM).text
    fresh = ModelPool()
    try:
        assert LlamaCpp("smollm2-135m", n_ctx=512, pool=fresh).generate(POEM).text == expected
    finally:
        fresh.clear()


def test_clear_frees_models_and_the_next_call_reloads():
    pool = ModelPool()
    lm = LlamaCpp("smollm2-135m", n_ctx=256, pool=pool)
    held = lm.load()
    expected = lm.generate(POEM).text
    pool.clear()
    assert held.closed.is_set() and pool.loaded() == []
    assert lm.generate(POEM).text == expected  # fetched a fresh model from the pool
    assert len(pool.loaded()) == 1 and lm.load() is not held
    pool.clear()


def test_seeded_samples_reproduce_and_differ_by_sample_index(smol):
    def sample(i: int) -> str:
        return smol.generate(
            chat(POEM.messages[0].content, temperature=1.0, max_tokens=12, sample_index=i)
        ).text

    first = [sample(i) for i in range(3)]
    again = [sample(i) for i in range(3)]
    assert first == again
    assert len(set(first)) >= 2


def test_pool_shares_one_model_per_file_and_ctx(pool):
    a = LlamaCpp("smollm2-135m", n_ctx=512, pool=pool).load()
    b = LlamaCpp("smollm2-135m", n_ctx=512, pool=pool).load()
    assert a is b and a.load_s > 0


def test_concurrent_calls_are_serialized(smol):
    expected = smol.generate(POEM).text
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda: results.append(smol.generate(POEM).text)) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 3


def test_prompt_longer_than_context_is_one_line_error(smol):
    with pytest.raises(LMError) as err:
        smol.generate(chat("word " * 800, max_tokens=4))
    msg = str(err.value)
    assert "n_ctx (now 512)" in msg and "\n" not in msg


def test_qwen_loads_verified_and_answers(pool):
    qwen = LlamaCpp("qwen2.5-0.5b", n_ctx=512, pool=pool)
    loaded = qwen.load()  # resolves, assembles if needed, checks sha256, loads
    resolved = pool.resolver.resolve("qwen2.5-0.5b")
    assert resolved.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert loaded.path == str(resolved.path)
    out = qwen.generate(
        chat("What is the capital of France? Reply with only the city name.", max_tokens=8)
    )
    assert "paris" in out.text.lower() and out.completion_tokens > 0
