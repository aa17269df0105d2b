"""The task model's own hidden state as a local-reward backbone (``make_backbone("qwen")``).

A frozen sentence encoder embeds what an output is about, which the two outputs of a pair share;
the small LLM that reads the output downstream may encode what it will do with it. This backbone
runs a bundled GGUF model (default Qwen2.5-0.5B, the task model) through llama.cpp in embedding
mode and mean-pools its last hidden layer. It is slow next to MiniLM (a whole LLM forward pass
per text), so every text is cached by digest like any backbone's; pass an ``EmbeddingCache``
with a directory to keep them across runs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from coalign.rewards._backbone import CachedBackbone
from coalign.rewards._cache import EmbeddingCache


class LlamaBackbone(CachedBackbone):
    """Mean-pooled final hidden states of a llama.cpp model, L2-normalized.

    Args:
        model: a bundled model name (``qwen2.5-0.5b``, ``smollm2-135m``) or a GGUF path.
        cache: embedding cache (in memory unless given a directory).
        n_ctx: the longest text in tokens; longer texts are cut to it (the head must see a
            fixed-size row, and a rendered pair is budgeted far below this).
        n_threads: llama.cpp threads (default: ``COALIGN_LM_THREADS`` or the cores).
    """

    def __init__(self, model: str = "qwen2.5-0.5b", cache: EmbeddingCache | None = None,
                 n_ctx: int = 1024, n_threads: int | None = None) -> None:
        super().__init__(cache)
        import llama_cpp

        from coalign.errors import ConfigError
        from coalign.lm import LMError, ModelResolver, default_threads

        resolver = ModelResolver()
        try:
            resolved = resolver.resolve(model)
            resolver.verify(resolved)
        except LMError as exc:
            raise ConfigError(f"rewards backbone qwen: {exc}") from None
        path = str(resolved.path)
        threads = n_threads or default_threads()
        # a pooled embedding needs the whole text in one micro-batch
        self.llama = llama_cpp.Llama(model_path=path, embedding=True, n_ctx=n_ctx,
                                     n_batch=n_ctx, n_ubatch=n_ctx, n_threads=threads,
                                     n_threads_batch=threads, verbose=False,
                                     pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN)
        digest = (resolved.sha256 or _file_digest(path))[:16]
        self._id = f"llama:{resolved.name}:{digest}:mean"

    @property
    def id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return int(self.llama.n_embd())

    def _encode(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            vec = np.asarray(self.llama.embed(text, normalize=False, truncate=True),
                             dtype=np.float32)
            norm = float(np.linalg.norm(vec))
            rows.append(vec / norm if norm > 0 else vec)
        return np.stack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)


def _file_digest(path: str, chunk: int = 1 << 20) -> str:
    """Digest of the first and last MiB and the size: enough to tell weights apart, fast."""
    p = Path(path)
    h = hashlib.sha256(str(p.stat().st_size).encode())
    with p.open("rb") as f:
        h.update(f.read(chunk))
        f.seek(max(0, p.stat().st_size - chunk))
        h.update(f.read(chunk))
    return h.hexdigest()[:16]
