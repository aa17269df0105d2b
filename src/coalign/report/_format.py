"""How a report (and the CLI) prints a param value, a step's reset params or a paired
interval: one short line."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

POLICY_VALUE = "lrf-selector"  # what the loop records for a per-instance param

__all__ = ["POLICY_VALUE", "interval_text", "reset_note", "shorten", "summarize_value"]


def shorten(text: str, limit: int = 120) -> str:
    """One line of at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def summarize_value(value: Any) -> str:
    if isinstance(value, Mapping) and isinstance(value.get("instruction"), str):
        demos = value.get("demos") or []
        suffix = f" (+{len(demos)} demos)" if demos else ""
        return shorten(value["instruction"], 100) + suffix
    if isinstance(value, Mapping) and "safetensors_b64" in value:
        return f"weights ({len(str(value['safetensors_b64']))} base64 chars)"
    if value == POLICY_VALUE:
        return "per-instance choice by the local reward"
    return shorten(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def reset_note(reset: Any) -> str:
    """How a step shows the sibling params it put back at their starting values (a switched
    choice validated without the values tuned for the old option)."""
    names = [str(n) for n in reset] if isinstance(reset, list | tuple) else []
    return f" ({', '.join(names)} back at the starting value)" if names else ""


def interval_text(mean: float, lo: float, hi: float) -> str:
    """A mean paired difference and its 95% interval, as ``coalign optimize`` prints it."""
    return f"{mean:+.4f} [{lo:+.4f}, {hi:+.4f}]"
