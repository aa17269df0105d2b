"""OpenAICompatible against a real fault-injecting HTTP server on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from coalign.lm import LMError, OpenAICompatible, chat
from tests.endpoint_server import FaultServer

pytestmark = pytest.mark.server


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv


def _client(url: str, delays: list[float], **kw) -> OpenAICompatible:
    kw = {"timeout": 5.0, "max_retries": 4, "backoff": 0.2, "max_backoff": 1.0, **kw}
    return OpenAICompatible(url, "m1", api_key="k", sleep=delays.append, seed=0, **kw)


def test_success_parses_text_usage_and_served_model(server):
    lm = _client(server.url, [])
    out = lm.generate(chat("hi", max_tokens=7, stop=("\n",)))
    assert (out.text, out.prompt_tokens, out.completion_tokens) == ("echo:hi", 11, 3)
    assert out.model == "m1" and out.extra["served_model"] == "m1-served"
    assert (lm.calls, lm.retries) == (1, 0)
    body = server.bodies[0]
    assert body["max_tokens"] == 7 and body["stop"] == ["\n"] and "seed" not in body
    lm.close()


def test_seeds_follow_sample_index(server):
    lm = _client(server.url, [])
    for i in (0, 1, 0):
        lm.generate(chat("q", temperature=0.8, sample_index=i))
    seeds = [b["seed"] for b in server.bodies]
    assert seeds[0] == seeds[2] != seeds[1]
    assert seeds[0] == chat("q", temperature=0.8).seed()


def test_retries_on_429_and_5xx_then_succeeds(server):
    server.script = ["429", "500", "503"]
    delays: list[float] = []
    lm = _client(server.url, delays)
    assert lm.generate(chat("x")).text == "echo:x"
    assert (lm.calls, lm.retries) == (4, 3)
    assert len(server.bodies) == 4
    for i, d in enumerate(delays):  # exponential, jittered into [0.5, 1] of the step, capped
        step = min(1.0, 0.2 * 2**i)
        assert 0.5 * step <= d <= step


def test_retry_with_real_sleeps(server):
    server.script = ["500", "429"]
    lm = OpenAICompatible(server.url, "m1", api_key="k", backoff=0.05, max_retries=3)
    start = time.perf_counter()
    assert lm.generate(chat("y")).text == "echo:y"
    assert lm.retries == 2 and time.perf_counter() - start >= 0.05 * 0.5 + 0.1 * 0.5


def test_timeout_is_retried(server):
    server.script = ["sleep"]
    lm = _client(server.url, [], timeout=0.4)
    start = time.perf_counter()
    assert lm.generate(chat("slow")).text == "echo:slow"
    assert (lm.calls, lm.retries) == (2, 1)
    assert time.perf_counter() - start < server.sleep_s + 1.0


def test_retry_after_header_is_honoured_and_capped(server):
    server.script = ["429", "429"]
    server.headers = {"Retry-After": "0.9"}
    delays: list[float] = []
    lm = _client(server.url, delays, backoff=0.01)
    lm.generate(chat("z"))
    assert delays == [pytest.approx(0.9), pytest.approx(0.9)]
    server.script = ["429"]
    server.headers = {"Retry-After": "60"}
    delays.clear()
    lm.generate(chat("z"))
    assert delays == [1.0]  # max_backoff


def test_other_4xx_fails_at_once(server):
    server.script = ["400"]
    lm = _client(server.url, [])
    with pytest.raises(LMError) as err:
        lm.generate(chat("bad"))
    msg = str(err.value)
    assert (lm.calls, lm.retries) == (1, 0)
    assert server.url in msg and "m1" in msg and "HTTP 400" in msg and "\n" not in msg


def test_permanent_failure_is_one_line(server):
    server.default = "503"
    delays: list[float] = []
    lm = _client(server.url, delays, max_retries=2)
    with pytest.raises(LMError) as err:
        lm.generate(chat("never"))
    msg = str(err.value)
    assert (lm.calls, lm.retries, len(delays)) == (3, 2, 2)
    assert msg.startswith(f"openai endpoint {server.url} model m1: failed after 3 attempts")
    assert "HTTP 503" in msg and "injected 503" in msg and "\n" not in msg


def test_connection_refused_is_retried_then_reported():
    with socket.socket() as s:  # a port that was free a moment ago and has no listener
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    delays: list[float] = []
    lm = _client(f"http://127.0.0.1:{port}/v1", delays, max_retries=1)
    with pytest.raises(LMError, match=rf"127\.0\.0\.1:{port}/v1 model m1: .*connection error"):
        lm.generate(chat("x"))
    assert (lm.calls, lm.retries) == (2, 1)


def test_threads_share_one_client(server):
    server.script = ["500"] * 4
    lm = _client(server.url, [])
    out: list[str] = []
    threads = [
        threading.Thread(target=lambda i=i: out.append(lm.generate(chat(f"t{i}")).text))
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(out) == sorted(f"echo:t{i}" for i in range(8))
    assert (lm.calls, lm.retries) == (12, 4)
