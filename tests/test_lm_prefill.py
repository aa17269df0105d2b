"""Chunk-aligned prefix reuse: an answer does not depend on what the KV cache held before.

The real embedded model (Qwen2.5-0.5B GGUF) runs here: the property is about llama.cpp's
kernels, which no double can stand in for.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from coalign.lm import LlamaCpp, ModelPool, chat
from coalign.lm._prefill import PREFILL_CHUNK, reusable_prefix


def test_reusable_prefix_keeps_whole_chunks_of_the_canonical_part():
    cached = list(range(300))
    assert reusable_prefix(cached, 256, list(range(200)) + [-1], chunk=64) == 192
    # the common prefix runs past the canonical part (the previous call's last partial chunk
    # and its generated tokens): only the canonical chunks count
    assert reusable_prefix(cached, 128, list(range(290)) + [-1], chunk=64) == 128
    # the whole prompt is cached: its last chunk is still evaluated, to give logits
    assert reusable_prefix(cached, 256, list(range(128)), chunk=64) == 64
    assert reusable_prefix(cached, 256, [-1] + list(range(1, 200)), chunk=64) == 0
    assert reusable_prefix([], 0, list(range(100)), chunk=64) == 0


@pytest.fixture(scope="module")
def pool() -> Iterator[ModelPool]:
    p = ModelPool()
    yield p
    p.clear()


def _first_logits(llama, tokens: list[int]) -> np.ndarray:
    """Logits of the prompt's last token, through the same generate() path the chat calls use."""
    gen = llama.generate(tokens, temp=0.0)
    next(gen)
    logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),)).copy()
    gen.close()
    return logits


def test_reused_prefix_gives_bit_identical_logits(pool):
    llama = pool.get("qwen2.5-0.5b", 2048).llama
    examples = " ".join(f"Example {i}: f({i}) == {i * i + 3}." for i in range(40))
    shared = "Solve the task. " + examples
    first = llama.tokenize((shared + "\nInstruction: be brief.").encode())
    second = llama.tokenize((shared + "\nInstruction: reason step by step, then answer.").encode())
    common = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    assert common % PREFILL_CHUNK != 0 and common > 2 * PREFILL_CHUNK  # a misaligned prefix

    llama.reset()
    fresh = _first_logits(llama, second)
    llama.reset()
    _first_logits(llama, first)  # leaves `first` (and a sampled token) in the cache
    reused = _first_logits(llama, second)
    assert llama.n_tokens > 0
    np.testing.assert_array_equal(reused, fresh)


def test_chat_answers_do_not_depend_on_call_order(pool):
    passage = " ".join(f"Fact {i}: item {i} weighs {3 * i + 1} grams." for i in range(30))
    asks = ["Which item weighs 31 grams?", "How much does item 7 weigh?",
            "Name the heaviest item.", "Which item weighs 31 grams? Answer with a number."]
    requests = [chat(f"{passage}\n\n{q}", max_tokens=12) for q in asks]
    fresh = LlamaCpp("qwen2.5-0.5b", pool=pool, reuse_prefix=False)
    reuse = LlamaCpp("qwen2.5-0.5b", pool=pool, reuse_prefix=True)
    expected = [fresh.generate(r).text for r in requests]
    order = [3, 0, 2, 0, 1, 3]
    assert [reuse.generate(requests[i]).text for i in order] == [expected[i] for i in order]
