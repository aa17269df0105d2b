"""One HTTP exchange under a wall-clock deadline, and endpoint URLs made safe to show.

httpx's timeouts (and so the OpenAI SDK's, which passes them on) bound each connect, write and
read, not the whole exchange: a server that drips its body a byte at a time never trips a 5 s
read timeout. :func:`within_deadline` therefore runs the exchange in a worker thread and waits
for it at most ``deadline`` seconds. The exchange gets the deadline too, to check between body
chunks and drop the connection, so the worker ends soon after the caller gave up: at once for a
drip, at most one read timeout later for a server that went silent.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import NamedTuple, TypeVar

T = TypeVar("T")


class Reply(NamedTuple):
    status: int
    headers: Mapping[str, str]
    body: bytes


class DeadlineExceeded(Exception):
    """The exchange did not complete within its deadline (internal; the backend maps it)."""


def within_deadline(exchange: Callable[[float], T], deadline: float,
                    done: Callable[[], None] = lambda: None) -> T:
    """``exchange(stop_at)`` (``stop_at`` on the ``time.monotonic`` clock) if it returns within
    ``deadline`` seconds; whatever it raises is raised here.

    ``done`` runs when the worker has really finished with the connection (which may be after
    this call gave up): a concurrency slot released there is never overbooked.

    Raises:
        DeadlineExceeded: no result in time.
    """
    future: Future[T] = Future()
    stop_at = time.monotonic() + deadline

    def work() -> None:
        try:
            future.set_result(exchange(stop_at))
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


# userinfo: everything between "://" and the last "@" before the path, as urllib and httpx
# split it (a key may itself contain "@")
_USERINFO = re.compile(r"(?<=://)[^/?#\s]*@")


def redact_url(text: str) -> str:
    """``text`` (a URL, or a spec such as ``openai:m@http://user:key@host/v1``) without the
    userinfo of its URLs: safe to print, store and hash."""
    return _USERINFO.sub("", text)
