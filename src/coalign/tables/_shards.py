"""Append-only, content-addressed shards of a replay table.

A shard is a gzip JSON-lines file named by the SHA-256 of its uncompressed content: one header
line (the table's system and space digest, the record count), then records. A record is an LLM
response keyed by its request digest, a ``done`` mark for a question whose whole prefix tree is
in the table, a step ``outcome`` pinned for replay (``RunContext.pinned``), or a ``pinned`` mark
for a question whose every such outcome is in the table. Shards are written once (temp file +
rename) and never rewritten; new records go first to a local journal (one flushed line each, so
a killed build loses at most the line being written), which is sealed into a shard at
checkpoints and on the next start.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import io
import json
import os
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalign.errors import StoreError
from coalign.files import write_atomic

SHARD_DIR = "shards"
SHARD_SUFFIX = ".jsonl.gz"
JOURNAL_PREFIX = "journal-"


class TableError(StoreError):
    """A table file is corrupt, truncated, foreign to the space, or a request is outside it."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored LLM response (token counts and latency of the original call)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    latency_s: float
    component: str = ""
    question: str = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    """A step result pinned for replay (JSON data), and the step and question that made it."""

    value: Any
    component: str = ""
    question: str = ""


LEVELS = ("greedy", "samples")


@dataclass(frozen=True, slots=True)
class Done:
    """A question whose prefix tree is complete at ``level``: ``greedy`` (every config's
    greedy outputs) or ``samples`` (also the temperature samples and their greedy subtrees)."""

    question: str
    paths: int
    llm_calls: int
    llm_s: float
    level: str = "greedy"


def entry_record(key: str, e: Entry) -> dict[str, Any]:
    return {"key": key, "component": e.component, "question": e.question, "text": e.text,
            "prompt_tokens": e.prompt_tokens, "completion_tokens": e.completion_tokens,
            "model": e.model, "latency_s": round(e.latency_s, 4)}


def done_record(d: Done) -> dict[str, Any]:
    return {"done": d.question, "paths": d.paths, "llm_calls": d.llm_calls,
            "llm_s": round(d.llm_s, 3), "level": d.level}


def outcome_record(key: str, o: Outcome) -> dict[str, Any]:
    return {"outcome": key, "value": o.value, "component": o.component, "question": o.question}


_KINDS = ("key", "done", "outcome", "pinned")


class ShardSet:
    """Every record of a table directory, loaded and verified; appends go to a journal.

    Args:
        directory: the table directory (shards live in ``directory/shards``).
        system, space: the table's identity; a shard or journal with another is refused.
        writer: open a journal for new records (a build); replay opens read-only.
    """

    def __init__(self, directory: Path, system: str, space: str, *, writer: bool = False) -> None:
        self.directory = Path(directory)
        self.system = system
        self.space = space
        self.entries: dict[str, Entry] = {}
        self.done: dict[tuple[str, str], Done] = {}  # (question, level) -> its mark
        self.outcomes: dict[str, Outcome] = {}  # pinned step results (``RunContext.pinned``)
        self.pinned: set[str] = set()  # questions whose every outcome is pinned
        self.shard_files: list[Path] = []
        self._lock = threading.Lock()
        self._journal: io.TextIOWrapper | None = None
        self._journal_path: Path | None = None
        self._pending = 0
        for path in sorted(self.shard_dir.glob(f"*{SHARD_SUFFIX}")):
            self._absorb(read_shard(path, system, space))
            self.shard_files.append(path)
        if writer:
            # journals left by a killed build of this space: keep their records, seal them
            for path in sorted(self.directory.glob(f"{JOURNAL_PREFIX}*.jsonl")):
                self._recover(path)

    @property
    def shard_dir(self) -> Path:
        return self.directory / SHARD_DIR

    def _absorb(self, records: Iterable[dict[str, Any]]) -> None:
        for rec in records:
            if "done" in rec:
                d = Done(str(rec["done"]), int(rec["paths"]), int(rec["llm_calls"]),
                         float(rec["llm_s"]), str(rec.get("level", "greedy")))
                self.done.setdefault((d.question, d.level), d)
            elif "outcome" in rec:
                self.outcomes.setdefault(str(rec["outcome"]), Outcome(
                    rec["value"], rec.get("component", ""), rec.get("question", "")))
            elif "pinned" in rec:
                self.pinned.add(str(rec["pinned"]))
            else:
                self.entries.setdefault(rec["key"], Entry(
                    rec["text"], int(rec["prompt_tokens"]), int(rec["completion_tokens"]),
                    rec["model"], float(rec["latency_s"]), rec.get("component", ""),
                    rec.get("question", "")))

    def _recover(self, path: Path) -> None:
        try:
            handle = open(path, "rb")  # noqa: SIM115
        except FileNotFoundError:  # another build sealed it a moment ago
            return
        with handle:
            try:  # a journal locked by a build still running is that build's to seal
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            records = list(read_journal(path, self.system, self.space))
            if records:
                self._write_shard(records)
                self._absorb(records)
            path.unlink(missing_ok=True)

    # -- appending (builds) ----------------------------------------------------------------------

    def append(self, key: str, entry: Entry) -> None:
        self._keep_first(self.entries, key, entry, entry_record(key, entry))

    def mark_done(self, done: Done) -> None:
        with self._lock:
            self.done[done.question, done.level] = done
            self._write_line(done_record(done))

    def append_outcome(self, key: str, outcome: Outcome) -> None:
        self._keep_first(self.outcomes, key, outcome, outcome_record(key, outcome))

    def _keep_first(self, records: dict[str, Any], key: str, value: Any,
                    line: Mapping[str, Any]) -> None:
        """Store and journal ``value`` unless ``key`` is known (the first record stands)."""
        with self._lock:
            if key in records:
                return
            records[key] = value
            self._write_line(line)

    def mark_pinned(self, question: str) -> None:
        with self._lock:
            self.pinned.add(question)
            self._write_line({"pinned": question})

    def _write_line(self, record: Mapping[str, Any]) -> None:
        if self._journal is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._journal_path = self.directory / f"{JOURNAL_PREFIX}{os.getpid()}.jsonl"
            self._journal = open(self._journal_path, "a", encoding="utf-8")  # noqa: SIM115
            fcntl.flock(self._journal, fcntl.LOCK_EX)  # held until sealed: see _recover
            self._journal.write(json.dumps(self._header(0)) + "\n")
        self._journal.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._journal.flush()  # a killed process keeps every line written before it
        self._pending += 1

    @property
    def pending(self) -> int:
        """Records in the journal not yet sealed into a shard."""
        return self._pending

    def seal(self) -> Path | None:
        """Move the journal's records into a new shard; returns it (``None`` if nothing new)."""
        with self._lock:
            if self._journal is None or self._journal_path is None:
                return None
            self._journal.close()
            self._journal = None
            path, self._journal_path = self._journal_path, None
            self._pending = 0
            records = list(read_journal(path, self.system, self.space))
            shard = self._write_shard(records) if records else None
            path.unlink()
            return shard

    def _header(self, n: int) -> dict[str, Any]:
        return {"coalign_table": 1, "system": self.system, "space": self.space, "records": n}

    def _write_shard(self, records: list[dict[str, Any]]) -> Path:
        body = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records)
        text = json.dumps(self._header(len(records)), sort_keys=True) + "\n" + body
        raw = text.encode("utf-8")
        name = hashlib.sha256(raw).hexdigest()[:20] + SHARD_SUFFIX
        self.shard_dir.mkdir(parents=True, exist_ok=True)
        path = self.shard_dir / name
        if not path.exists():  # content-addressed: the same records make the same file
            # mtime=0: the same records give the same bytes on every machine
            write_atomic(path, gzip.compress(raw, compresslevel=9, mtime=0))
        self.shard_files.append(path)
        return path

    def is_done(self, question: str, level: str) -> bool:
        """Complete at ``level`` (the samples level includes the greedy one)."""
        return (question, level) in self.done or (question, "samples") in self.done

    def done_at(self, level: str) -> list[Done]:
        return [d for (_, lv), d in self.done.items() if lv == level]

    def close(self) -> None:
        self.seal()


def _shard_error(path: Path, why: str) -> TableError:
    return TableError(f"table shard {path}: {why}; restore it from git (git checkout -- "
                      f"{path}) or delete it to rebuild its calls")


def read_shard(path: Path, system: str, space: str) -> list[dict[str, Any]]:
    """A shard's records, after checking its gzip stream, content hash, header and count."""
    try:
        raw = gzip.decompress(path.read_bytes())
    except (OSError, EOFError, zlib.error) as exc:
        raise _shard_error(path, f"corrupt or truncated ({type(exc).__name__})") from None
    if not path.name.startswith(hashlib.sha256(raw).hexdigest()[:20]):
        raise _shard_error(path, "content does not match its name (edited or damaged)")
    lines = raw.decode("utf-8").splitlines()
    records = list(_parse(lines, path, system, space, sealed=True))
    return records


def read_journal(path: Path, system: str, space: str) -> Iterator[dict[str, Any]]:
    """A journal's complete records; a torn last line (killed mid-write) is dropped."""
    lines = path.read_text(encoding="utf-8").split("\n")
    complete = lines[:-1]  # the text after the last newline was never finished
    yield from _parse(complete, path, system, space, sealed=False)


def _parse(lines: list[str], path: Path, system: str, space: str,
           *, sealed: bool) -> Iterator[dict[str, Any]]:
    if not lines:
        if sealed:
            raise _shard_error(path, "empty")
        return
    try:
        header = json.loads(lines[0])
        records = [json.loads(line) for line in lines[1:]]
    except ValueError:
        raise _shard_error(path, "not JSON lines") from None
    if not isinstance(header, dict) or header.get("coalign_table") != 1:
        raise _shard_error(path, "no table header")
    if header.get("system") != system or header.get("space") != space:
        raise TableError(
            f"table shard {path}: belongs to candidate space {header.get('system')}/"
            f"{header.get('space')}, this table is {system}/{space}; move it to its own table "
            "directory")
    if sealed and header.get("records") != len(records):
        raise _shard_error(path, f"holds {len(records)} records, its header says "
                                 f"{header.get('records')}")
    for rec in records:
        if not isinstance(rec, dict) or not any(k in rec for k in _KINDS):
            raise _shard_error(path, "a record is none of response, done mark, outcome, "
                                     "pinned mark")
        yield rec
