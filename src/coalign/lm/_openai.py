"""Remote backend: any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

Requests go through the ``openai`` SDK (its ``OpenAI`` client builds them, authenticates and
maps HTTP statuses to errors) with the SDK's own retries off (``max_retries=0``); the retry loop
stays here. The SDK's policy would differ from the one documented below (it also retries
408/409, never a 200 with a broken body) and retries silently, so tests could not count them.
Its timeouts are per read, so a dripped body would outlive any deadline: the body is streamed
(``with_streaming_response``) under a whole-request deadline (``_http``). And a malformed 200
reply would escape it as a validation or decode error: the body is parsed here. Every failure
ends as one :class:`LMError` line naming endpoint, model, last cause and attempts.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from coalign.lm._base import LMError, LMRefusal, LMRequest, LMResponse
from coalign.lm._http import DeadlineExceeded, Reply, redact_url, within_deadline

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_RETRY_STATUS = frozenset({429}) | frozenset(range(500, 600))


class _Failed(Exception):
    """One attempt failed; ``retry`` says whether another attempt may succeed."""

    def __init__(self, reason: str, retry: bool = True, hint: float | None = None,
                 refusal: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.retry, self.hint, self.refusal = reason, retry, hint, refusal


class OpenAICompatible:
    """Chat completions over HTTP, retried on anything a later attempt may fix.

    Retried, with backoff ``min(max_backoff, backoff * 2**retry)`` scaled by a random factor in
    [0.5, 1] (a server's ``Retry-After`` is honoured up to ``max_backoff``): HTTP 429 and 5xx,
    connection errors and resets, timeouts, truncated or non-JSON bodies (an HTML page with
    status 200 included), replies without ``choices``, and refusals (``null`` content or
    ``finish_reason: content_filter``; servers also emit these transiently). Not retried: other
    4xx (bad request, auth, unknown model), which a retry cannot fix. When the last attempt was a
    refusal the error is :class:`LMRefusal`, so it is never taken (or cached) as an answer.

    Args:
        base_url: endpoint root, e.g. ``http://127.0.0.1:8000/v1``. Userinfo
            (``http://user:key@host/v1``) is sent as HTTP basic auth and kept out of ``name``,
            ``base_url`` and errors.
        model: model id sent to the server (also the default of ``request.model``).
        api_key: bearer token; default ``$OPENAI_API_KEY``, else a placeholder that local
            servers accept.
        timeout: wall-clock seconds per attempt, from connecting to the last body byte.
        max_retries: retries after the first attempt (0 = try once).
        backoff: first delay in seconds; doubles per retry.
        max_backoff: cap on one delay.
        concurrency: most requests in flight at once over all threads (None: no cap).
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
        concurrency: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        seed: int | None = None,
    ) -> None:
        import httpx  # here, not at module top: only endpoint users pay for the imports
        import openai

        url = base_url.rstrip("/")
        self.base_url = redact_url(url)  # public and printable; the credentials stay in _client
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.concurrency = concurrency
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(concurrency) if concurrency else None
        self.calls = 0  # HTTP attempts made
        self.retries = 0  # attempts that were retries
        key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self._httpx, self._openai = httpx, openai
        # userinfo in the URL stays in it: httpx sends it as basic auth
        self._client = openai.OpenAI(base_url=url, api_key=key, timeout=httpx.Timeout(timeout),
                                     max_retries=0)
        # resolved now: the SDK imports its resources on first use (~0.8 s), which must not
        # count against the first request's deadline
        self._completions = self._client.chat.completions.with_streaming_response

    @property
    def name(self) -> str:
        # The endpoint is part of the identity: the same model id may be served differently.
        return f"openai:{self.model}@{self.base_url}"

    def generate(self, request: LMRequest) -> LMResponse:
        model = request.model or self.model
        payload: dict[str, Any] = {
            "model": model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.stop:
            payload["stop"] = list(request.stop)
        if request.temperature > 0:
            payload["seed"] = request.seed()  # vLLM and llama.cpp honour it; OpenAI: best effort
        last = _Failed("no attempt made")
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._sleep(self._delay(attempt - 1, last.hint))
            self._count(retry=attempt > 0)
            start = time.perf_counter()
            try:
                reply = self._post(payload)
                return _response(reply, model, time.perf_counter() - start, attempt)
            except _Failed as failed:
                last = failed
                if not failed.retry:
                    raise self._error(model, failed, attempt) from None
        raise self._error(model, last, self.max_retries)

    def _post(self, payload: dict[str, Any]) -> Reply:
        """One attempt; every way it can go wrong becomes :class:`_Failed`."""
        slots = self._slots
        if slots is not None:
            slots.acquire()  # released by the worker once it is done with the connection
        release = slots.release if slots is not None else _no_slot
        openai, httpx = self._openai, self._httpx
        try:
            reply = within_deadline(lambda stop_at: self._exchange(payload, stop_at),
                                    self.timeout, release)
        except DeadlineExceeded as exc:
            raise _Failed(f"timeout: {exc}") from None
        except (openai.APITimeoutError, httpx.TimeoutException):
            raise _Failed(f"timeout: no response within {self.timeout:g}s") from None
        except (openai.APIConnectionError, httpx.HTTPError) as exc:
            cause = exc.__cause__ or exc  # the SDK's "Connection error." wraps httpx's reason
            raise _Failed(f"connection error: {type(cause).__name__}: "
                          f"{_short(str(cause))}") from None
        if reply.status in _RETRY_STATUS:
            raise _Failed(_status_reason(reply), hint=_retry_after(reply))
        if not 200 <= reply.status < 300:
            raise _Failed(_status_reason(reply), retry=False)
        return reply

    def _exchange(self, payload: dict[str, Any], stop_at: float) -> Reply:
        """POST through the SDK and read the whole body by ``stop_at`` (``time.monotonic``)."""
        try:
            with self._completions.create(**payload) as response:
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if time.monotonic() > stop_at:  # leaving the block closes the connection
                        raise DeadlineExceeded("body still arriving at the deadline")
                return Reply(response.status_code, response.headers, bytes(body))
        except self._openai.APIStatusError as exc:  # 4xx/5xx: the SDK has read the body
            return Reply(exc.status_code, exc.response.headers, exc.response.content)

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

    def _error(self, model: str, failed: _Failed, attempt: int) -> LMError:
        tries = attempt + 1
        kind = LMRefusal if failed.refusal else LMError
        fix = "the model declined this prompt" if failed.refusal else \
            "check the server, model id and key"
        return kind(
            f"openai endpoint {self.base_url} model {model}: failed after {tries} "
            f"attempt{'s' if tries > 1 else ''} ({failed.reason}); {fix}"
        )

    def close(self) -> None:
        self._client.close()


def _response(reply: Reply, model: str, latency: float, attempt: int) -> LMResponse:
    """The answer in a 2xx reply, or :class:`_Failed` saying what is wrong with it."""
    try:
        data = json.loads(reply.body)
    except ValueError:  # also a body cut short, or not UTF-8
        kind = reply.headers.get("content-type", "no content type")
        raise _Failed(f"invalid JSON body ({kind}): {_short(repr(reply.body[:60]))}") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        raise _Failed("response has no choices" + _error_note(data))
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message")
    if not isinstance(message, dict):
        raise _Failed("choice has no message")
    content, finish = message.get("content"), choice.get("finish_reason")
    if content is None or finish == "content_filter" or message.get("refusal"):
        shown = "null content" if content is None else f"finish_reason {finish}"
        raise _Failed(f"refusal: {shown}", refusal=True)
    if not isinstance(content, str):
        raise _Failed(f"content is {type(content).__name__}, not text")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return LMResponse(
        text=content,
        prompt_tokens=_tokens(usage, "prompt_tokens"),
        completion_tokens=_tokens(usage, "completion_tokens"),
        model=model,
        latency_s=latency,
        extra={"finish_reason": finish, "served_model": data.get("model"), "retries": attempt},
    )


def _no_slot() -> None:
    return None


def _status_reason(reply: Reply) -> str:
    try:
        data = json.loads(reply.body)
    except ValueError:
        return f"HTTP {reply.status}: {_short(reply.body.decode('utf-8', 'replace')) or '-'}"
    note = _error_note(data)
    return f"HTTP {reply.status}" + (note or f": {_short(str(data))}")


def _error_note(data: Any) -> str:
    """``": <message>"`` from an OpenAI-style ``{"error": {"message": ...}}`` body, else ""."""
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return f": {_short(str(message))}" if message else ""


def _tokens(usage: dict, key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) else 0


def _retry_after(reply: Reply) -> float | None:
    value = reply.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:  # an HTTP date: rare for these servers, fall back to our own backoff
        return None


def _short(text: str, limit: int = 160) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
