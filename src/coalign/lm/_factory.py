"""Build a backend from a spec string such as ``"llamacpp:qwen2.5-0.5b"`` and endpoint settings."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from coalign.errors import ConfigError
from coalign.lm._base import LM
from coalign.lm._cache import CachedLM
from coalign.lm._http import redact_url
from coalign.lm._llamacpp import DEFAULT_MODEL, LlamaCpp
from coalign.lm._openai import DEFAULT_BASE_URL, OpenAICompatible

# the "@" that starts a spec's base URL: the first one followed by a scheme and "://" (any
# case: "HTTP://" must not leave the whole URL, key and all, in the model id)
_URL_START = re.compile(r"@(?=[A-Za-z][A-Za-z0-9+.-]*://)")
_NAME = re.compile(r"[a-z][a-z0-9_.+-]{0,23}")  # a backend name short enough to be no key
_URL_FORM = "http(s)://[user:key@]host[:port]/path"
_OPENAI_FORM = f"openai:<model>[@{_URL_FORM}], e.g. openai:gpt-4o-mini@https://api.openai.com/v1"


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
    ``$OPENAI_BASE_URL`` or the OpenAI API. Parsed strictly: a mistyped spec must not send a
    key inside the model id to another endpoint, so credentials are accepted only as the base
    URL's ``user:key@`` and no error shows them.

    Raises:
        ConfigError: unknown scheme, missing or malformed model, or a malformed base URL.
    """
    scheme, _, rest = spec.strip().partition(":")
    scheme = scheme.lower()
    if scheme not in BACKENDS:
        # the spec itself is not shown: a key pasted as the spec would be its "backend"
        name = repr(scheme) if _NAME.fullmatch(scheme) else "(not shown)"
        raise ConfigError(f"lm spec: unknown backend {name}; valid backends: "
                          f"{', '.join(sorted(BACKENDS))} (e.g. {_EXAMPLES})")
    if scheme == "llamacpp":
        if redact_url(rest) != rest:
            raise ConfigError("lm spec llamacpp:...: takes a bundled model name or a .gguf "
                              "path, not a URL with credentials (the spec is not shown)")
        return LMSpec(scheme, rest or DEFAULT_MODEL)
    at = _URL_START.search(rest)
    model, url = (rest[:at.start()], rest[at.end():]) if at else (rest, None)
    if "@" in model:  # a URL without a scheme ("@host/v1"), or a key typed before the model
        raise ConfigError("lm spec openai:...: the model id holds '@' with no http(s):// base "
                          f"URL after it; write {_OPENAI_FORM} (the spec is not shown: it may "
                          "hold a key)")
    # the URL is checked first and shown redacted: an error about the model echoes no key
    where = f"lm spec {f'openai:{model}@<url>'!r}"
    base = _checked_url(url, where) if url is not None else None
    shown = repr(f"openai:{model}" + (f"@{redact_url(base)}" if base else ""))
    if not model.strip():
        raise ConfigError(f"lm spec {shown}: missing model id; write {_OPENAI_FORM}")
    if "://" in model or any(c.isspace() or not c.isprintable() for c in model):
        raise ConfigError(f"lm spec {shown}: the model id is malformed (a URL, a space or a "
                          f"control character); write {_OPENAI_FORM}")
    if base is None and (env := os.environ.get("OPENAI_BASE_URL")):
        base = _checked_url(env, "$OPENAI_BASE_URL")
    return LMSpec(scheme, model, base)


def _checked_url(url: str, where: str) -> str:
    """``url`` with its scheme in lower case, refused unless it is ``http(s)://host[/path]``
    with credentials, if any, in its userinfo only (a query or fragment could carry a key that
    no redaction removes, and would break the request paths joined onto it)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parses the port: a non-number raises ValueError
    except ValueError:
        raise ConfigError(f"{where}: the base URL is malformed; write {_URL_FORM}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ConfigError(f"{where}: the base URL must start with http:// or https://")
    if not parts.hostname:
        raise ConfigError(f"{where}: the base URL names no host; write {_URL_FORM}")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise ConfigError(f"{where}: the base URL must not carry a query or fragment (a key "
                          "goes in its user:key@ part); write " + _URL_FORM)
    if "@" in parts.path or any(c.isspace() or not c.isprintable() for c in url):
        raise ConfigError(f"{where}: the base URL has '@', a space or a control character "
                          f"outside its user:key@ part; write {_URL_FORM}")
    return parts.scheme.lower() + url[len(parts.scheme):]


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
        raise ConfigError(f"lm spec {redact_url(spec)!r}: bad backend option ({exc})") from exc
    return CachedLM(lm, cache) if cache is not None else lm
