"""The LM protocol: one request in, one response out.

A request carries everything that determines the answer (messages, model, sampling settings and a
``sample_index``), so its digest is a complete cache key: Monte-Carlo samples at temperature > 0
differ by ``sample_index`` yet replay exactly from the cache.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple, Protocol, runtime_checkable

from coalign.errors import CoalignError

# Requests, messages and responses are NamedTuples: immutable and hashable like frozen dataclasses
# but about 3x cheaper to build, which matters because every component call makes several.


class Message(NamedTuple):
    role: str  # "system" | "user" | "assistant"
    content: str


class LMRequest(NamedTuple):
    messages: tuple[Message, ...]
    model: str = ""  # backend model id; "" means the backend's default
    temperature: float = 0.0
    max_tokens: int = 128
    stop: tuple[str, ...] = ()
    sample_index: int = 0  # distinguishes Monte-Carlo samples; part of the cache key

    def to_json(self) -> dict:
        return {
            "messages": [[m.role, m.content] for m in self.messages],
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stop": list(self.stop),
            "sample_index": self.sample_index,
        }

    def digest(self, backend: str = "") -> str:
        """Stable content hash of the request as served by ``backend``."""
        payload = json.dumps([backend, self.to_json()], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def seed(self) -> int:
        """Deterministic sampling seed derived from the request itself."""
        return int(self.digest()[:8], 16)


def chat(user: str, system: str | None = None, **kwargs) -> LMRequest:
    """Shorthand for the common one-turn request."""
    msgs = ([Message("system", system)] if system else []) + [Message("user", user)]
    return LMRequest(messages=tuple(msgs), **kwargs)


_NO_EXTRA: Mapping = MappingProxyType({})


class LMResponse(NamedTuple):
    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    cached: bool = False
    latency_s: float = 0.0
    extra: Mapping = _NO_EXTRA  # backend details (never part of the answer); read-only default


@runtime_checkable
class LM(Protocol):
    """A language-model backend. Implementations must be safe to call from several threads."""

    @property
    def name(self) -> str:
        """Identifies the backend and model (part of cache keys and price lookups)."""
        ...

    def generate(self, request: LMRequest) -> LMResponse: ...

    def close(self) -> None: ...


class LMError(CoalignError, RuntimeError):
    """A backend failed permanently (after retries); the message says which endpoint and why."""


class LMRefusal(LMError):
    """The model declined to answer (``null`` content or a content filter).

    An error, not an answer: it is never cached or stored, and it ends the affected run or
    example like any other :class:`LMError`.
    """

    locate = True  # RunContext prefixes the component and example it happened in
