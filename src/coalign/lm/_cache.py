"""A persistent response cache in front of any LM.

The key is ``request.digest(inner.name)``: the backend identity plus the whole request, including
``sample_index``, so Monte-Carlo samples are cached separately and a re-run replays them exactly.
Each miss is stored in its own SQLite transaction (WAL mode); a process killed mid-run leaves every
committed answer intact and never a partial row.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

from coalign.errors import StoreError
from coalign.lm._base import LM, LMRequest, LMResponse

_SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    request_json TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    model TEXT NOT NULL,
    latency_s REAL NOT NULL,
    extra_json TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class CachedLM:
    """Wraps ``inner``; answers repeated requests from an SQLite file without calling it.

    Hits come back with ``cached=True`` and the token counts and latency of the original call.
    The lock guards only the database: calls to ``inner`` run outside it, so a thread-safe
    remote backend still serves several threads at once. A request already being answered for
    another thread is waited for, not sent again (no duplicate call).

    Args:
        inner: the backend to cache.
        path: SQLite file (created with its parent folder if missing).
    """

    def __init__(self, inner: LM, path: str | Path) -> None:
        self.inner = inner
        self.path = Path(path)
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._inflight: dict[str, threading.Event] = {}
        self._db = self._open()

    @property
    def name(self) -> str:
        return self.inner.name

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a committed row survives a killed process (not a power cut).
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=10000")  # other processes may share the file
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, _SCHEMA_VERSION):
                raise StoreError(
                    f"response cache {self.path}: schema version {version}, expected "
                    f"{_SCHEMA_VERSION}; delete the file or use another cache path"
                )
            db.execute(_SCHEMA)
            db.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"response cache {self.path}: cannot open ({exc}); delete it or pick another path"
            ) from exc
        return db

    def generate(self, request: LMRequest) -> LMResponse:
        key = request.digest(self.inner.name)
        while True:
            with self._lock:
                row = self._db.execute(
                    "SELECT text, prompt_tokens, completion_tokens, model, latency_s, extra_json "
                    "FROM responses WHERE key = ?",
                    (key,),
                ).fetchone()
                if row is not None:
                    self.hits += 1
                    break
                pending = self._inflight.get(key)
                if pending is None:
                    self._inflight[key] = threading.Event()
                    break
            pending.wait()  # then read its row; if that call failed, this thread tries
        if row is not None:
            text, prompt, completion, model, latency, extra = row
            return LMResponse(
                text, prompt, completion, model, True, latency, extra=json.loads(extra)
            )
        try:
            response = self.inner.generate(request)
            self._store(key, request, response)
        finally:
            with self._lock:
                self._inflight.pop(key).set()
        return response

    def _store(self, key: str, request: LMRequest, response: LMResponse) -> None:
        values = (
            key,
            self.inner.name,
            json.dumps(request.to_json(), ensure_ascii=False, sort_keys=True),
            response.text,
            response.prompt_tokens,
            response.completion_tokens,
            response.model,
            response.latency_s,
            json.dumps(dict(response.extra), default=str, sort_keys=True),
            time.time(),
        )
        with self._lock:
            self.misses += 1
            # One statement in autocommit mode is one transaction. OR IGNORE: if two threads
            # raced on the same request, the first stored answer stays the canonical one.
            try:
                self._db.execute(
                    "INSERT OR IGNORE INTO responses (key, backend, request_json, text, "
                    "prompt_tokens, completion_tokens, model, latency_s, extra_json, created) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    values,
                )
            except sqlite3.OperationalError as exc:  # full disk, read-only media: no row kept
                raise StoreError(
                    f"response cache {self.path}: cannot store an answer ({exc}); free disk "
                    "space or make its folder writable, then rerun"
                ) from None

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        """Close the database and the wrapped backend."""
        with self._lock:
            self._db.close()
        self.inner.close()
