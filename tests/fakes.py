"""Test doubles for unit tests of pure logic only (never behind a reported figure)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from coalign.lm._base import LMRequest, LMResponse


class FakeLM:
    """An LM whose answer is ``handler(request)``; counts calls."""

    def __init__(self, handler: Callable[[LMRequest], str], name: str = "fake",
                 latency_s: float = 0.0) -> None:
        self._handler = handler
        self._name = name
        self._latency_s = latency_s
        self._lock = threading.Lock()
        self.calls = 0

    @property
    def name(self) -> str:
        return self._name

    def generate(self, request: LMRequest) -> LMResponse:
        with self._lock:
            self.calls += 1
        text = self._handler(request)
        prompt = sum(len(m.content.split()) for m in request.messages)
        return LMResponse(text, prompt, len(text.split()), self._name,
                          latency_s=self._latency_s)

    def close(self) -> None:
        return None
