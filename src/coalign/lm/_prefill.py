"""Prompt evaluation in fixed chunks, so that reusing a cached prefix never changes an answer.

llama.cpp evaluates a prompt in batches, and its CPU kernels do not give bit-identical results
for a token evaluated in batches of different shapes (measured on Qwen2.5-0.5B Q4_K_M: splitting
one 410-token prompt at token 5, 30 or 407 moves its last logits by up to 0.49). Reusing the
KV cache of a common prefix evaluates the rest of the prompt from an arbitrary position, so a
greedy answer used to depend on the call before it. Here every prompt is evaluated in chunks of
``PREFILL_CHUNK`` tokens starting at position 0, and only whole chunks are ever reused: the
computation of each chunk is then the same whatever the cache held, and an answer depends on
its request alone (thread count does not change it either). Chunks of 64 tokens prefill as fast
as llama.cpp's default 512 on this CPU (660 tokens: 8.2 s against 8.3 s on one thread).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

PREFILL_CHUNK = 64


def reusable_prefix(cached: Sequence[int], canonical: int, tokens: Sequence[int],
                    chunk: int = PREFILL_CHUNK) -> int:
    """How many leading tokens of ``tokens`` may come from the cache: the common prefix with
    ``cached``, cut to the ``canonical`` tokens that were evaluated as whole aligned chunks (not
    the previous call's last partial chunk, nor its generated tokens), kept short of the whole
    prompt so its last chunk is evaluated and yields logits, and rounded down to a chunk."""
    limit = min(len(cached), canonical, len(tokens) - 1)
    common = 0
    while common < limit and cached[common] == tokens[common]:
        common += 1
    return common - common % chunk


def chunked_llama_class() -> type:
    """``llama_cpp.Llama`` with chunk-aligned prefix reuse (imported lazily: the package is slow
    to import)."""
    from llama_cpp import Llama

    class ChunkedLlama(Llama):
        """A ``Llama`` built with ``n_batch = n_ubatch = PREFILL_CHUNK`` that keeps only whole
        cached chunks before each generation (see the module docstring)."""

        # leading cached tokens that were evaluated as whole aligned chunks; reset() needs no
        # override: it empties the cache, so no prefix is common with it
        _canonical = 0

        def generate(self, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Iterator[int]:
            tokens = list(tokens)
            # llama-cpp-python reuses the longest common prefix of its first n_tokens: cut them
            # to the aligned part (or to nothing) so that it evaluates from a chunk boundary
            self.n_tokens = reusable_prefix(self.input_ids[: self.n_tokens], self._canonical,
                                            tokens, self.n_batch)
            # Set before the prompt is evaluated: a failed evaluation leaves n_tokens at the
            # chunks it finished, and a caller that stops the generator early closes it here.
            self._canonical = len(tokens) - len(tokens) % self.n_batch
            yield from super().generate(tokens, *args, **kwargs)

    return ChunkedLlama
