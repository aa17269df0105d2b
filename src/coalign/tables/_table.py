"""A replay table opened for reading: its space, its records, replay backends and status."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalign.data import Example
from coalign.runtime import Runtime
from coalign.systems import models_of
from coalign.tables._build import pool_examples
from coalign.tables._outcomes import TableOutcomes
from coalign.tables._replay import ReplayLM
from coalign.tables._rewards import Rewards, compute_rewards
from coalign.tables._shards import LEVELS, Done, ShardSet
from coalign.tables._space import CandidateSpace


@dataclass(frozen=True)
class LevelStatus:
    level: str
    done: int  # questions complete at this level
    paths: int  # full paths of the done questions
    llm_hours_per_question: float | None  # measured on the questions built at this level
    eta_hours: float | None  # LLM time left for this level at that rate


@dataclass(frozen=True)
class TableStatus:
    directory: str
    system: str
    space: str
    questions: int
    configs: int
    levels: list[LevelStatus]
    entries: int  # stored responses = LLM calls made
    llm_hours: float
    shards: int
    bytes: int
    pinned: int = 0  # questions whose step outcomes are pinned (``coalign table pin``)
    outcomes: int = 0

    def lines(self) -> list[str]:
        out = [f"table {self.directory} ({self.system}, space {self.space}, "
               f"{self.configs} configs, {self.questions} questions)"]
        for lv in self.levels:
            rate = ("" if lv.llm_hours_per_question is None
                    else f", {lv.llm_hours_per_question * 60:.1f} LLM min/question")
            eta = "" if lv.eta_hours is None else f", ETA {lv.eta_hours:.1f} LLM hours"
            total = (f"/{self.configs * self.questions}" if lv.level == "greedy"
                     else f" (~{lv.paths // lv.done if lv.done else 0} a question)")
            out.append(f"{lv.level}: {lv.done}/{self.questions} questions, {lv.paths}{total} "
                       f"paths{rate}{eta}")
        out.append(f"{self.entries} LLM calls stored, {self.llm_hours:.2f} LLM hours; "
                   f"{self.shards} shards, {self.bytes / 1e6:.2f} MB")
        if self.outcomes or self.pinned:
            out.append(f"step outcomes pinned for {self.pinned} questions ({self.outcomes} "
                       "outcomes)")
        return out


def llm_hours_per_question(done: Sequence[Done]) -> float | None:
    """The LLM hours a question took, over the ``done`` ones that made a call: a question
    copied whole from a ``--reuse`` donor made none and says nothing of what a new one costs
    (a grown table's first questions are all copies). A question's calls land at the level that
    first needed them, so ``done`` is one level's."""
    built = [d.llm_s for d in done if d.llm_calls]
    return sum(built) / len(built) / 3600 if built else None


class Table:
    """A table directory (``space.json`` + ``shards/``), loaded and verified.

    Raises:
        ConfigError: no or malformed ``space.json``.
        TableError: a corrupt, truncated or foreign shard (one line naming it).
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.space = CandidateSpace.load(self.directory)
        self.shards = ShardSet(self.directory, self.space.system, self.space.digest)

    def lms(self) -> dict[str, ReplayLM]:
        """Replay backends for every model the table's system calls."""
        return {m: ReplayLM(self.shards, m, str(self.directory))
                for m in models_of(self.space.task())}

    def runtime(self, max_workers: int = 1, *, seed: int = 0, **kwargs: Any) -> Runtime:
        """A runtime that replays the table: its LLM answers and its pinned step outcomes
        (``kwargs``: other ``Runtime`` fields)."""
        return Runtime(lms=self.lms(), outcomes=TableOutcomes(self.shards),
                       max_workers=max_workers, seed=seed, **kwargs)

    def finished(self, level: str = "greedy") -> list[Example]:
        """The pool's questions complete at ``level``, in pool order."""
        return [e for e in pool_examples(self.space) if self.shards.is_done(e.id, level)]

    def complete(self, level: str = "greedy") -> bool:
        """Whether every pool question is finished at ``level``."""
        return all(self.shards.is_done(q, level) for q in self.space.questions)

    def rewards(self, level: str = "greedy") -> Rewards:
        """The global reward of every config of the space on every question finished at
        ``level``, on replay."""
        task = self.space.task()
        # 2 workers: a sandboxed test run (code_gen) waits on its child process, not the GIL
        return compute_rewards(task, list(self.space.configs(task)), self.finished(level),
                               self.runtime(max_workers=2))

    def status(self) -> TableStatus:
        total = len(self.space.questions)
        levels = []
        for level in LEVELS:
            done = [d for d in self.shards.done_at(level)]
            n = sum(self.shards.is_done(q, level) for q in self.space.questions)
            rate = llm_hours_per_question(done)
            levels.append(LevelStatus(level, n, sum(d.paths for d in done), rate,
                                      None if rate is None else rate * (total - n)))
        return TableStatus(str(self.directory), self.space.system, self.space.digest, total,
                           self.space.n_configs(), levels, len(self.shards.entries),
                           sum(e.latency_s for e in self.shards.entries.values()) / 3600,
                           len(self.shards.shard_files),
                           sum(p.stat().st_size for p in self.shards.shard_files),
                           len(self.shards.pinned & set(self.space.questions)),
                           len(self.shards.outcomes))


def find_tables(start: Path | None = None, *, complete: str | None = None) -> list[Path]:
    """Table directories (with a ``space.json``) under ``benchmarks/tables`` of the current
    directory or of the checkout holding this package (or of ``start``); none for an installed
    wheel, which ships no tables. ``complete``: only the tables finished at that level
    (``"greedy"``); by default finished or not."""
    roots = [start] if start else [Path.cwd(), Path(__file__).resolve().parents[3]]
    for root in roots:
        folder = root / "benchmarks" / "tables"
        if folder.is_dir():
            found = sorted(p for p in folder.iterdir() if (p / "space.json").is_file())
            return [p for p in found if complete is None or Table(p).complete(complete)]
    return []
