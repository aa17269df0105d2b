"""A real OpenAI-compatible chat endpoint on 127.0.0.1 that fails on purpose.

It answers ``echo:<last user message>``, so a reply is a pure function of the prompt and a run
through a faulty server can be compared with a run through a healthy one. Which requests fail is
scripted (``script``) or chosen by :func:`fault_mix` from a hash of the request and how often it
was seen, so the same requests meet the same faults whatever the thread interleaving.
"""

from __future__ import annotations

import hashlib
import json
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Every way the server can misbehave besides an HTTP error status ("429", "500", "400", ...).
FAULTS = ("429", "500", "reset", "sleep", "truncated", "invalid_json", "html", "no_choices",
          "drip", "null")

Chooser = Callable[[dict, int], str]


def fault_mix(rate: float = 0.2, kinds: tuple[str, ...] = FAULTS, salt: str = "") -> Chooser:
    """Fail a fraction ``rate`` of requests, spread over ``kinds``; the n-th sighting of a
    request gets its own draw, so a retry may succeed."""

    def choose(body: dict, seen: int) -> str:
        key = f"{salt}|{seen}|{json.dumps(body, sort_keys=True)}".encode()
        u = int(hashlib.sha256(key).hexdigest()[:12], 16) / 16**12
        return kinds[int(u / rate * len(kinds))] if u < rate else "ok"

    return choose


class FaultServer:
    """Answers chat completions; the first calls follow ``script``, later ones ``choose`` (or
    ``default``). ``injected`` counts every action other than ``ok``.

    Actions: ``ok``; an HTTP status such as ``"429"`` (with ``Retry-After: retry_after``, if set) or
    ``"500"``; ``sleep`` (answer after ``sleep_s``: a hang); ``reset`` (RST, no response);
    ``truncated`` (Content-Length larger than the body, then close); ``invalid_json``;
    ``html`` (an HTML page with status 200); ``no_choices``; ``drip`` (the body one byte per
    ``drip_s``); ``null`` (``null`` content, as a content filter sends); ``filter``
    (``finish_reason: content_filter`` with partial text).
    """

    def __init__(self, sleep_s: float = 1.5, drip_s: float = 0.05,
                 choose: Chooser | None = None) -> None:
        self.script: list[str] = []
        self.default = "ok"
        self.choose = choose
        self.sleep_s = sleep_s
        self.drip_s = drip_s
        self.retry_after: str | None = None  # sent with every injected 429 when set
        self.reply: Callable[[dict], str] | None = None  # the answer text; default echo:<prompt>
        self.bodies: list[dict] = []
        self.auth: list[str | None] = []
        self.headers: dict[str, str] = {}
        self.injected: Counter[str] = Counter()
        self.in_flight = self.max_in_flight = 0
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def next_action(self, body: dict, auth: str | None = None) -> str:
        with self._lock:
            self.bodies.append(body)
            self.auth.append(auth)
            key = json.dumps(body, sort_keys=True)
            seen = self._seen[key]
            self._seen[key] += 1
            if self.script:
                action = self.script.pop(0)
            else:
                action = self.choose(body, seen) if self.choose else self.default
            if action != "ok":
                self.injected[action] += 1
            return action

    def _flight(self, step: int) -> None:
        with self._lock:
            self.in_flight += step
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

            def log_message(self, *args) -> None:  # keep test output clean
                return None

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                action = server.next_action(body, self.headers.get("Authorization"))
                server._flight(+1)
                try:
                    self._act(action, body)
                except OSError:  # the client gave up (deadline): nothing left to do
                    self.close_connection = True
                finally:
                    server._flight(-1)

            def _act(self, action: str, body: dict) -> None:
                if action == "sleep":
                    if server._stop.wait(server.sleep_s):
                        return
                    action = "ok"
                if action == "reset":
                    self.close_connection = True
                    self.rfile.close()  # so close() below really closes: SO_LINGER 0 -> RST
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               struct.pack("ii", 1, 0))
                    self.connection.close()
                elif action.isdigit():
                    hint = server.retry_after if action == "429" else None
                    extra = {"Retry-After": hint} if hint else {}
                    self._send(int(action), _json({"error": {"message": f"injected {action}"}}),
                               extra=extra)
                elif action == "truncated":
                    data = _json(completion(body))
                    self._send(200, data[: len(data) // 2], length=len(data))
                    self.close_connection = True
                elif action == "invalid_json":
                    self._send(200, b'{"id": "x", "choices": [{"index": 0, "mess')
                elif action == "html":
                    self._send(200, b"<html><body><h1>502 Bad Gateway</h1></body></html>",
                               kind="text/html")
                elif action == "drip":
                    self._drip(_json(completion(body)))
                else:
                    self._send(200, _json(completion(body, action, server.reply)))

            def _send(self, status: int, data: bytes, length: int | None = None,
                      kind: str = "application/json", extra: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data) if length is None else length))
                for k, v in {**(extra or {}), **server.headers}.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _drip(self, data: bytes) -> None:
                self._send(200, b"", length=len(data))
                for i in range(len(data)):
                    if server._stop.wait(server.drip_s):
                        return
                    self.wfile.write(data[i : i + 1])
                    self.wfile.flush()

        return Handler

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


def completion(body: dict, action: str = "ok",
               reply: Callable[[dict], str] | None = None) -> dict:
    """A chat completion answering ``reply(body)`` (default ``echo:<last message>``); ``action``
    may spoil it."""
    text = reply(body) if reply else f"echo:{body['messages'][-1]['content']}"
    message = {"role": "assistant", "content": text}
    finish = "stop"
    if action == "null":
        message["content"] = None
    elif action == "filter":
        message["content"], finish = text[:5], "content_filter"
    choices = [{"index": 0, "message": message, "finish_reason": finish}]
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"] + "-served",
        "choices": [] if action == "no_choices" else choices,
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


def _json(payload: dict) -> bytes:
    return json.dumps(payload).encode()
