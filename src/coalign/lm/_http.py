"""One HTTP exchange under a wall-clock deadline, and endpoint URLs made safe to show.

httpx's timeouts bound each connect, write and read, not the whole exchange: a server that drips
its body a byte at a time never trips a 5 s read timeout. :func:`post_json` therefore runs the
exchange in a worker thread and waits for it at most ``deadline`` seconds. The worker also checks
the deadline between body chunks and drops the connection, so it ends soon after the caller gave
up: at once for a drip, at most one read timeout later for a server that went silent.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import httpx


class Reply(NamedTuple):
    status: int
    headers: Mapping[str, str]
    body: bytes


class DeadlineExceeded(Exception):
    """The exchange did not complete within its deadline (internal; the backend maps it)."""


def post_json(client: httpx.Client, path: str, payload: Any, deadline: float,
              done: Callable[[], None] = lambda: None) -> Reply:
    """POST ``payload`` as JSON and read the whole reply within ``deadline`` seconds.

    ``done`` runs when the worker has really finished with the connection (which may be after
    this call gave up): a concurrency slot released there is never overbooked.

    Raises:
        DeadlineExceeded: no complete reply in time.
        httpx.HTTPError: transport failures (refused, reset, truncated body, per-read timeout).
    """
    future: Future[Reply] = Future()
    stop_at = time.monotonic() + deadline

    def work() -> None:
        try:
            future.set_result(_exchange(client, path, payload, stop_at))
        except BaseException as exc:  # handed to the caller, who decides what it means
            future.set_exception(exc)
        finally:
            done()

    try:
        threading.Thread(target=work, name="coalign-http", daemon=True).start()
    except BaseException:
        done()
        raise
    try:
        return future.result(timeout=deadline)
    except TimeoutError:
        raise DeadlineExceeded(f"no complete response within {deadline:g}s") from None


def _exchange(client: httpx.Client, path: str, payload: Any, stop_at: float) -> Reply:
    with client.stream("POST", path, json=payload) as response:
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if time.monotonic() > stop_at:  # leaving the block closes the connection
                raise DeadlineExceeded("body still arriving at the deadline")
        return Reply(response.status_code, response.headers, bytes(body))


# userinfo: everything between "://" and the last "@" before the path, as urllib and httpx
# split it (a key may itself contain "@")
_USERINFO = re.compile(r"(?<=://)[^/?#\s]*@")


def redact_url(text: str) -> str:
    """``text`` (a URL, or a spec such as ``openai:m@http://user:key@host/v1``) without the
    userinfo of its URLs: safe to print, store and hash."""
    return _USERINFO.sub("", text)
