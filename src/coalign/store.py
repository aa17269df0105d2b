"""RunStore: one SQLite database (WAL) per run directory.

A writer holds the run dir's single-writer lock (``RunLock``) while the store is open; a
``readonly`` store takes no lock and opens the database read-only, so reports work on a run that
is still going and on read-only media.

Holds the run's metadata and config snapshots, traces (per tag: e.g. ``eval``, ``val``), preference
pairs (content-digested), per-component costs, and the optimizer's step ledger. Every write is one
transaction, so a process killed at any moment leaves a consistent store: a trace or pair is
either fully there or absent.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from coalign import __version__
from coalign.errors import DataError, StoreError
from coalign.pairs import PreferencePair, canonical_json
from coalign.runlock import RunLock
from coalign.trace import Trace, Usage

SCHEMA_VERSION = 1
DB_NAME = "run.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS configs (digest TEXT PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS traces (
    tag TEXT NOT NULL, example_id TEXT NOT NULL, config_digest TEXT NOT NULL,
    reward REAL, json TEXT NOT NULL, UNIQUE (tag, example_id, config_digest));
CREATE TABLE IF NOT EXISTS pairs (
    digest TEXT PRIMARY KEY, component TEXT NOT NULL, example_id TEXT NOT NULL,
    tag TEXT NOT NULL, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS costs (
    component TEXT NOT NULL, kind TEXT NOT NULL, calls INTEGER NOT NULL,
    cache_hits INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL, PRIMARY KEY (component, kind));
CREATE TABLE IF NOT EXISTS steps (
    step INTEGER PRIMARY KEY, state TEXT NOT NULL, json TEXT NOT NULL);
"""


class RunStore:
    """Thread-safe access to one run directory's database."""

    def __init__(self, run_dir: str | Path, *, create: bool = True,
                 readonly: bool = False) -> None:
        self.run_dir = Path(run_dir)
        path = self.run_dir / DB_NAME
        if (not create or readonly) and not path.exists():
            raise StoreError(f"no run store at {path}; pass a run directory made by coalign")
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise StoreError(f"run dir {self.run_dir} is a file; pass a directory")
        self._lock = threading.RLock()
        self._depth = 0  # transaction nesting (guarded by the lock)
        self._writer: RunLock | None = None
        if readonly:
            self._db = _open_readonly(path)
            return
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create run dir {self.run_dir} ({exc.strerror})") from None
        try:
            self._writer = RunLock(self.run_dir)
        except OSError as exc:  # writing the holder's pid into the lock file: a full disk
            raise StoreError(f"run dir {self.run_dir}: cannot write its lock file "
                             f"({exc.strerror}); free disk space, then rerun") from None
        try:
            if create and not path.exists():
                _create(path)
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0 and not create:
                raise StoreError(f"{path} is not a coalign run store")
            if version not in (0, SCHEMA_VERSION):
                raise StoreError(f"run store {path} has schema {version}, this coalign reads "
                                 f"{SCHEMA_VERSION}")
            with self.transaction() as db:  # idempotent; makes an empty (schema 0) file a store
                _init_schema(db)
        except sqlite3.DatabaseError as exc:
            self.close()
            raise StoreError(f"run store {path} is unreadable: {exc}") from None
        except StoreError:
            self.close()
            raise

    def close(self) -> None:
        with self._lock:
            db = getattr(self, "_db", None)
            if db is not None:
                db.close()
            if self._writer is not None:
                self._writer.release()
                self._writer = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic unit of writes; rolled back on any error. Nested uses join the outer one."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._db
                finally:
                    self._depth -= 1
                return
            self._depth = 1
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                if self._db.in_transaction:  # SQLite may have rolled back already (disk full)
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError):  # full disk, read-only media
                    raise StoreError(f"run store {self.run_dir / DB_NAME}: cannot write ({exc}); "
                                     "nothing of this write was kept: free disk space or make "
                                     "the run dir writable, then rerun") from None
                raise
            finally:
                self._depth = 0

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.DatabaseError as exc:  # e.g. a table missing from a crafted file
                raise StoreError(f"run store {self.run_dir / DB_NAME} is damaged ({exc})"
                                 ) from None

    def _record(self, raw: str, what: str) -> dict:
        """A stored JSON object; a damaged one is refused by name, never half-read."""
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):  # RecursionError: nested too deeply
            record = None
        if not isinstance(record, dict):
            raise StoreError(f"run store {self.run_dir / DB_NAME}: {what} is not a JSON object; "
                             "the store was altered")
        return record

    def _trace(self, raw: str) -> Trace:
        try:
            return Trace.from_json(self._record(raw, "a stored trace"))
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"run store {self.run_dir / DB_NAME}: a stored trace lacks or "
                             f"garbles a field ({exc!r}); the store was altered") from None

    def inside(self, relative: str) -> Path:
        """``run_dir / relative``, refused unless it stays inside the run dir: paths read back
        from the store (checkpoints) must not reach files elsewhere."""
        base = self.run_dir.resolve()
        path = (base / relative).resolve()
        if not path.is_relative_to(base):
            raise StoreError(f"run store {self.run_dir} names a path outside its run dir "
                             f"({relative!r}); the store was altered")
        return path

    # -- metadata and configs ---------------------------------------------------------------

    def set_meta(self, key: str, value: Any) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        if not rows:
            return default
        try:
            return json.loads(rows[0][0])
        except json.JSONDecodeError:  # written by an older version as plain text
            return rows[0][0]

    def save_config(self, digest: str, config_json: dict) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO configs VALUES (?, ?)",
                       (digest, canonical_json(config_json)))

    def load_config(self, digest: str) -> dict:
        rows = self._query("SELECT json FROM configs WHERE digest = ?", (digest,))
        if not rows:
            raise StoreError(f"run store {self.run_dir} has no config {digest[:12]}")
        return json.loads(rows[0][0])

    # -- traces -------------------------------------------------------------------------------

    def put_trace(self, tag: str, trace: Trace) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO traces VALUES (?, ?, ?, ?, ?)",
                       (tag, trace.example_id, trace.config_digest, trace.reward,
                        json.dumps(trace.to_json(), ensure_ascii=False)))

    def get_trace(self, tag: str, example_id: str, config_digest: str) -> Trace | None:
        rows = self._query("SELECT json FROM traces WHERE tag=? AND example_id=? AND "
                           "config_digest=?", (tag, example_id, config_digest))
        return self._trace(rows[0][0]) if rows else None

    def traces(self, tag: str, config_digest: str | None = None) -> list[Trace]:
        sql, args = "SELECT json FROM traces WHERE tag=?", (tag,)
        if config_digest is not None:
            sql, args = sql + " AND config_digest=?", (tag, config_digest)
        rows = self._query(sql + " ORDER BY rowid", args)
        return [self._trace(r[0]) for r in rows]

    def trace_sample(self, tag: str, per_config: int) -> list[Trace]:
        """At most ``per_config`` traces of each config under ``tag`` (configs in the order
        first stored), the same examples across configs where they have them: what a report
        shows, read without loading every trace of a large run."""
        configs = [r[0] for r in self._query(
            "SELECT config_digest, MIN(rowid) AS first FROM traces WHERE tag=? "
            "GROUP BY config_digest ORDER BY first", (tag,))]
        if not configs:
            return []
        shown = [r[0] for r in self._query(
            "SELECT example_id FROM traces WHERE tag=? AND config_digest=? ORDER BY rowid "
            "LIMIT ?", (tag, configs[0], per_config))]
        marks = ",".join("?" * len(shown))
        out = []
        for digest in configs:
            rows = sorted(self._query(
                f"SELECT example_id, json FROM traces WHERE tag=? AND config_digest=? AND "
                f"example_id IN ({marks})", (tag, digest, *shown)),
                key=lambda r: shown.index(r[0]))
            if not rows:  # validated on other examples: its first ones
                rows = self._query("SELECT example_id, json FROM traces WHERE tag=? AND "
                                   "config_digest=? ORDER BY rowid LIMIT ?",
                                   (tag, digest, per_config))
            out.extend(self._trace(r[1]) for r in rows)
        return out

    # -- preference pairs -----------------------------------------------------------------------

    def put_pairs(self, pairs: Iterable[PreferencePair], tag: str = "stage1") -> int:
        """Store pairs (idempotent by digest); returns how many were new."""
        new = 0
        with self.transaction() as db:
            for p in pairs:
                cur = db.execute("INSERT OR IGNORE INTO pairs VALUES (?, ?, ?, ?, ?)",
                                 (p.digest, p.component, p.example_id, tag,
                                  canonical_json(p.to_json())))
                new += cur.rowcount
        return new

    def pairs(self, component: str | None = None, tag: str | None = None) -> list[PreferencePair]:
        """Stored pairs, each revalidated against its digest: corrupt records are refused."""
        sql, args = "SELECT digest, json FROM pairs WHERE 1=1", []
        if component is not None:
            sql, args = sql + " AND component=?", [*args, component]
        if tag is not None:
            sql, args = sql + " AND tag=?", [*args, tag]
        out = []
        for digest, raw in self._query(sql + " ORDER BY rowid", tuple(args)):
            try:
                record = json.loads(raw)
            except json.JSONDecodeError:
                raise DataError(f"pair {digest[:12]} in {self.run_dir} is not valid JSON") from None
            out.append(PreferencePair.from_json(record, digest=digest))
        return out

    # -- costs --------------------------------------------------------------------------------

    def add_cost(self, component: str, kind: str, usage: Usage) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO costs VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(component, kind) DO "
                "UPDATE SET calls=calls+excluded.calls, cache_hits=cache_hits+excluded.cache_hits,"
                " prompt_tokens=prompt_tokens+excluded.prompt_tokens,"
                " completion_tokens=completion_tokens+excluded.completion_tokens",
                (component, kind, usage.calls, usage.cache_hits, usage.prompt_tokens,
                 usage.completion_tokens))

    def costs(self, kind: str | None = None) -> dict[str, Usage]:
        """Per-component usage summed over kinds (or for one ``kind``)."""
        sql = ("SELECT component, SUM(calls), SUM(cache_hits), SUM(prompt_tokens), "
               "SUM(completion_tokens) FROM costs")
        args: tuple = ()
        if kind is not None:
            sql, args = sql + " WHERE kind=?", (kind,)
        rows = self._query(sql + " GROUP BY component ORDER BY component", args)
        return {r[0]: Usage(int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in rows}

    # -- optimizer step ledger -------------------------------------------------------------------

    def put_step(self, step: int, state: str, record: dict) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO steps VALUES (?, ?, ?)",
                       (step, state, canonical_json(record)))

    def steps(self) -> list[tuple[int, str, dict]]:
        return [(s, st, self._record(j, f"ledger step {s}")) for s, st, j in
                self._query("SELECT step, state, json FROM steps ORDER BY step")]


def _init_schema(db: sqlite3.Connection) -> None:
    for statement in filter(str.strip, _SCHEMA.split(";")):
        db.execute(statement)  # executescript would commit mid-transaction
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    db.execute("INSERT OR IGNORE INTO meta VALUES ('lib_version', ?)", (__version__,))


def _create(path: Path) -> None:
    """A new store at ``path``, built aside and renamed into place: a full disk or a kill
    during the first write leaves no half-made (schema 0) store that ``resume`` would refuse,
    only nothing, so rerunning the same command starts the run afresh. The writer's lock is
    held: no other process builds beside it."""
    tmp = path.with_name(f".{path.name}.new")
    parts = [Path(f"{tmp}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")]
    try:
        for part in parts:  # a stale build (killed here) is simply redone
            part.unlink(missing_ok=True)
        db = sqlite3.connect(tmp, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")  # persistent: kept in the file's header
            db.execute("BEGIN IMMEDIATE")
            _init_schema(db)
            db.execute("COMMIT")
        finally:
            db.close()  # checkpoints the WAL into the file and removes it
        os.replace(tmp, path)
    except (sqlite3.OperationalError, OSError) as exc:
        raise StoreError(f"run store {path}: cannot create it ({exc}); nothing was written: "
                         "free disk space or make the run dir writable, then rerun") from None
    finally:
        for part in parts:
            with suppress(OSError):
                part.unlink(missing_ok=True)


def _open_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection; on read-only media, where SQLite cannot create the WAL index,
    an immutable one (nothing can write there anyway)."""
    last: sqlite3.Error | None = None
    for flags in ("mode=ro", "mode=ro&immutable=1"):
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?{flags}", uri=True,
                                 check_same_thread=False, isolation_level=None)
            version = db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.Error as exc:
            last = exc
            continue
        if version != SCHEMA_VERSION:
            db.close()
            raise StoreError(f"{path} is not a coalign run store (schema {version})")
        return db
    raise StoreError(f"run store {path} is unreadable: {last}")
