"""Remote backend: any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

Retries are our own loop, with the SDK's retries turned off (``max_retries=0``): the SDK would
retry silently, so tests could not count retries, its policy (it also retries 408/409 and has
its own backoff constants) would differ from what we document, and a permanent failure would
surface as an SDK exception instead of one :class:`LMError` line naming endpoint, model and the
last status. Server ``Retry-After`` hints are honoured, capped like our own delays.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from coalign.lm._base import LMError, LMRequest, LMResponse

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_RETRY_STATUS = frozenset({429}) | frozenset(range(500, 600))

if TYPE_CHECKING:
    import openai


class OpenAICompatible:
    """Chat completions over HTTP with retries on transient failures.

    Retried: HTTP 429, 5xx, timeouts and connection errors, with exponential backoff
    ``min(max_backoff, backoff * 2**attempt)`` scaled by a random factor in [0.5, 1]. Not retried:
    other 4xx (bad request, auth, unknown model), which a retry cannot fix.

    Args:
        base_url: endpoint root, e.g. ``http://127.0.0.1:8000/v1``.
        model: model id sent to the server (also the default of ``request.model``).
        api_key: bearer token; default ``$OPENAI_API_KEY``, else a placeholder that local
            servers accept.
        timeout: seconds per HTTP attempt.
        max_retries: retries after the first attempt (0 = try once).
        backoff: first delay in seconds; doubles per retry.
        max_backoff: cap on one delay.
        sleep: how to wait (tests pass a recorder); seed: seeds the jitter.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        sleep: Callable[[float], None] = time.sleep,
        seed: int | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.calls = 0  # HTTP attempts made
        self.retries = 0  # attempts that were retries
        key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        import openai  # here, not at module top: importing the SDK takes seconds

        self._sdk = openai
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=key, timeout=timeout, max_retries=0
        )

    @property
    def name(self) -> str:
        # The endpoint is part of the identity: the same model id may be served differently.
        return f"openai:{self.model}@{self.base_url}"

    def generate(self, request: LMRequest) -> LMResponse:
        model = request.model or self.model
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.stop:
            kwargs["stop"] = list(request.stop)
        if request.temperature > 0:
            kwargs["seed"] = request.seed()  # honoured by vLLM and llama.cpp; best effort on OpenAI
        sdk = self._sdk
        reason = ""
        hint: float | None = None  # the server's Retry-After from the last failure
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._sleep(self._delay(attempt - 1, hint))
                hint = None
            self._count(retry=attempt > 0)
            start = time.perf_counter()
            try:
                out = self._client.chat.completions.create(**kwargs)
            except sdk.APIStatusError as exc:
                reason = f"HTTP {exc.status_code}: {_short(exc.message)}"
                if exc.status_code not in _RETRY_STATUS:
                    raise self._error(model, reason, attempt) from exc
                hint = _retry_after(exc)
                continue
            except sdk.APITimeoutError:
                reason = f"timeout after {self.timeout:g}s"
                continue
            except sdk.APIConnectionError as exc:
                reason = f"connection error: {_short(str(exc.__cause__ or exc))}"
                continue
            except sdk.OpenAIError as exc:  # malformed response and the like: not transient
                raise self._error(model, _short(str(exc)), attempt) from exc
            return self._response(out, model, time.perf_counter() - start, attempt)
        raise self._error(model, reason, self.max_retries)

    def _response(self, out: Any, model: str, latency: float, attempt: int) -> LMResponse:
        if not out.choices:
            raise self._error(model, "response has no choices", attempt)
        choice = out.choices[0]
        usage = out.usage
        return LMResponse(
            text=choice.message.content or "",
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            model=model,
            latency_s=latency,
            extra={
                "finish_reason": choice.finish_reason,
                "served_model": out.model,
                "retries": attempt,
            },
        )

    def _delay(self, retry: int, hint: float | None) -> float:
        base = min(self.max_backoff, self.backoff * (2**retry))
        with self._lock:
            jitter = 0.5 + 0.5 * self._rng.random()  # spreads clients that failed together
        delay = base * jitter
        if hint is not None:
            delay = max(delay, min(hint, self.max_backoff))
        return delay

    def _count(self, retry: bool) -> None:
        with self._lock:
            self.calls += 1
            self.retries += int(retry)

    def _error(self, model: str, reason: str, attempt: int) -> LMError:
        tries = attempt + 1
        return LMError(
            f"openai endpoint {self.base_url} model {model}: failed after {tries} "
            f"attempt{'s' if tries > 1 else ''} ({reason}); check the server, model id and key"
        )

    def close(self) -> None:
        self._client.close()


def _retry_after(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:  # an HTTP date: rare for these servers, fall back to our own backoff
        return None


def _short(text: str, limit: int = 160) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
