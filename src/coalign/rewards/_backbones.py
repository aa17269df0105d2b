"""The backbones a run config can name (``rewards.backbone``), built by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coalign.errors import ConfigError
from coalign.rewards._backbone import CachedBackbone, HashingBackbone, MiniLMBackbone


def _llama_backbone(**kwargs: Any) -> CachedBackbone:
    from coalign.rewards._llama_backbone import LlamaBackbone  # llama.cpp only when chosen

    return LlamaBackbone(**kwargs)


BACKBONES: dict[str, Callable[..., CachedBackbone]] = {
    "minilm": MiniLMBackbone, "hashing": HashingBackbone, "qwen": _llama_backbone}


def make_backbone(name: str = "minilm", **kwargs: Any) -> CachedBackbone:
    """Build a backbone by name; an unknown name lists the valid ones."""
    if name not in BACKBONES:
        raise ConfigError(
            f"rewards backbone {name!r} is unknown; choose one of {sorted(BACKBONES)}"
        )
    return BACKBONES[name](**kwargs)
