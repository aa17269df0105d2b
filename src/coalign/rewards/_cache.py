"""Embedding cache keyed by the digest of (backbone id, text): in memory, optionally on disk.

On disk each flush writes one new safetensors shard (temp file + rename), so a crash never leaves
a half-written cache and no pickle is ever read.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

from coalign.errors import StoreError
from coalign.files import replacing


def text_digest(backbone_id: str, text: str) -> str:
    return hashlib.sha256(f"{backbone_id}\x00{text}".encode()).hexdigest()


class EmbeddingCache:
    """Maps text digests to float32 vectors; ``directory`` (optional) persists them."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self._mem: dict[str, np.ndarray] = {}
        self._pending: dict[str, np.ndarray] = {}
        self._dir = Path(directory) if directory is not None else None
        if self._dir is not None and self._dir.is_dir():
            for shard in sorted(self._dir.glob("shard-*.safetensors")):
                try:
                    self._mem.update(load_file(str(shard)))
                except Exception as exc:  # a truncated or foreign file
                    raise StoreError(
                        f"embedding cache shard {shard} is unreadable ({exc}); delete it to rebuild"
                    ) from exc

    def __len__(self) -> int:
        return len(self._mem)

    def get(self, key: str) -> np.ndarray | None:
        return self._mem.get(key)

    def put(self, key: str, vector: np.ndarray) -> None:
        vec = np.ascontiguousarray(vector, dtype=np.float32)
        self._mem[key] = vec
        if self._dir is not None:
            self._pending[key] = vec

    def flush(self) -> None:
        """Write vectors added since the last flush as one new shard."""
        if self._dir is None or not self._pending:
            return
        self._dir.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256("".join(sorted(self._pending)).encode()).hexdigest()[:16]
        with replacing(self._dir / f"shard-{name}.safetensors") as tmp:
            save_file(self._pending, str(tmp))
        self._pending = {}
