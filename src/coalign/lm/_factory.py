"""Build a backend from a spec string such as ``"llamacpp:qwen2.5-0.5b"`` and endpoint settings."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalign.errors import ConfigError
from coalign.lm._base import LM
from coalign.lm._cache import CachedLM
from coalign.lm._llamacpp import DEFAULT_MODEL, LlamaCpp
from coalign.lm._openai import DEFAULT_BASE_URL, OpenAICompatible

_URL = re.compile(r"^(?P<model>.+?)@(?P<url>https?://\S+)$")


@dataclass(frozen=True, slots=True)
class LMSpec:
    """A parsed spec: ``scheme:model[@base_url]``."""

    scheme: str
    model: str
    base_url: str | None = None


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    """How remote (``openai:``) backends are called; ``None`` keeps the backend's default.

    A run config's ``endpoint:`` block and the CLI's ``--timeout/--retries/--concurrency``.
    Local backends ignore them.
    """

    timeout_s: float | None = None  # wall-clock limit of one attempt
    max_retries: int | None = None  # retries after the first attempt
    concurrency: int | None = None  # requests in flight at once, per endpoint model

    def __post_init__(self) -> None:
        if self.timeout_s is not None and not 0 < self.timeout_s < math.inf:  # NaN fails too
            raise ConfigError(f"endpoint timeout_s must be a number of seconds > 0, got "
                              f"{self.timeout_s}")
        if self.max_retries is not None and self.max_retries < 0:
            raise ConfigError(f"endpoint max_retries must be >= 0, got {self.max_retries}")
        if self.concurrency is not None and self.concurrency < 1:
            raise ConfigError(f"endpoint concurrency must be >= 1, got {self.concurrency}")

    def options(self) -> dict[str, Any]:
        """The backend constructor's keyword arguments for the settings given."""
        names = {"timeout": self.timeout_s, "max_retries": self.max_retries,
                 "concurrency": self.concurrency}
        return {k: v for k, v in names.items() if v is not None}


def _llamacpp(spec: LMSpec, kw: dict[str, Any]) -> LM:
    return LlamaCpp(spec.model, **kw)


def _openai(spec: LMSpec, kw: dict[str, Any]) -> LM:
    return OpenAICompatible(spec.base_url or DEFAULT_BASE_URL, spec.model, **kw)


# Spec scheme -> builder. Add a backend here (and to REMOTE if it takes EndpointSettings).
BACKENDS: dict[str, Callable[[LMSpec, dict[str, Any]], LM]] = {
    "llamacpp": _llamacpp,
    "openai": _openai,
}
REMOTE = frozenset({"openai"})

_EXAMPLES = (
    "llamacpp:qwen2.5-0.5b, llamacpp:smollm2-135m, llamacpp:/path/model.gguf, "
    "openai:gpt-4o-mini@https://api.openai.com/v1"
)


def parse_spec(spec: str) -> LMSpec:
    """Split ``spec`` into scheme, model and (for ``openai``) base URL.

    ``llamacpp`` alone means the default model; ``openai:<model>`` without ``@url`` uses
    ``$OPENAI_BASE_URL`` or the OpenAI API.

    Raises:
        ConfigError: unknown scheme or missing model.
    """
    scheme, _, rest = spec.strip().partition(":")
    scheme = scheme.lower()
    if scheme not in BACKENDS:
        raise ConfigError(
            f"lm spec {spec!r}: unknown backend {scheme!r}; valid backends: "
            f"{', '.join(sorted(BACKENDS))} (e.g. {_EXAMPLES})"
        )
    if scheme == "llamacpp":
        return LMSpec(scheme, rest or DEFAULT_MODEL)
    match = _URL.match(rest)
    model, url = (match["model"], match["url"]) if match else (rest, None)
    if not model:
        raise ConfigError(
            f"lm spec {spec!r}: missing model id; write openai:<model>[@<base_url>], "
            "e.g. openai:gpt-4o-mini@https://api.openai.com/v1"
        )
    return LMSpec(scheme, model, url or os.environ.get("OPENAI_BASE_URL"))


def make_lm(spec: str, cache: str | Path | None = None,
            endpoint: EndpointSettings | None = None, **kw: Any) -> LM:
    """Create the backend named by ``spec``; keyword arguments go to its constructor.

    Args:
        spec: e.g. ``"llamacpp:qwen2.5-0.5b"`` or ``"openai:gpt-4o-mini@https://host/v1"``.
        cache: optional SQLite path; wraps the backend in :class:`CachedLM`.
        endpoint: settings applied when ``spec`` names a remote backend (explicit ``kw`` win).

    Raises:
        ConfigError: unknown scheme, missing model, or an argument the backend does not take.
    """
    parsed = parse_spec(spec)
    if endpoint is not None and parsed.scheme in REMOTE:
        kw = {**endpoint.options(), **kw}
    try:
        lm = BACKENDS[parsed.scheme](parsed, kw)
    except TypeError as exc:
        raise ConfigError(f"lm spec {spec!r}: bad backend option ({exc})") from exc
    return CachedLM(lm, cache) if cache is not None else lm
