"""Pinning a finished table's step outcomes after the fact (tables built before builds kept
them).

A question is walked again exactly as its build walked it, every LLM request answered from the
table and every sandboxed run made live. A walk is right when it asks only requests the table
holds and reaches every response the build stored for that question; a walk that runs off the
table met a run that ended another way than at build time, and the question is walked again
(the sandbox is rerun, not cached) up to ``tries`` times. The right walk's outcomes are
appended with a ``pinned`` mark; from then on a replay of that question reads them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from coalign.errors import ConfigError
from coalign.lm import LMRequest, LMResponse
from coalign.runtime import Runtime
from coalign.systems import models_of
from coalign.tables._build import expand, pool_examples
from coalign.tables._outcomes import PendingOutcomes
from coalign.tables._replay import ReplayLM, ReplayMiss
from coalign.tables._shards import ShardSet
from coalign.tables._space import CandidateSpace


@dataclass
class PinReport:
    pinned: int  # finished questions pinned (all of them, not only this run's)
    finished: int
    pinned_now: int
    outcomes: int  # outcomes appended by this run
    retried: list[str] = field(default_factory=list)  # a walk ran off the table first
    unreached: dict[str, int] = field(default_factory=dict)  # responses no walk reached
    failed: list[str] = field(default_factory=list)  # every walk ran off: left unpinned
    stopped_early: bool = False


class _Tracking(ReplayLM):
    """A replay backend that notes which table entries it answered from."""

    def __init__(self, shards: ShardSet, model: str) -> None:
        super().__init__(shards, model)
        self.hits: set[str] = set()

    def generate(self, request: LMRequest) -> LMResponse:
        response = super().generate(request)
        self.hits.add(request.digest(self._backend))
        return response


def pin_table(directory: str | Path, *, tries: int = 5, limit: int | None = None,
              minutes: float | None = None, seal_every: int = 20,
              on_question: Callable[[str, int, int], None] | None = None) -> PinReport:
    """Pin the outcomes of the table's finished, unpinned questions (kill it at any moment and
    rerun: a question's outcomes are appended only with its mark)."""
    if tries < 1:
        raise ConfigError(f"table pin: tries must be at least 1, got {tries}")
    directory = Path(directory)
    space = CandidateSpace.load(directory)
    task = space.task()
    shards = ShardSet(directory, space.system, space.digest, writer=True)
    finished = [e for e in pool_examples(space) if shards.is_done(e.id, "greedy")]
    todo = [e for e in finished if e.id not in shards.pinned]
    stopped = limit is not None and len(todo) > limit
    todo = todo[:limit]
    stored: dict[str, set[str]] = {}
    for key, entry in shards.entries.items():
        stored.setdefault(entry.question, set()).add(key)
    deadline = time.monotonic() + minutes * 60 if minutes is not None else None
    report = PinReport(0, len(finished), 0, 0)
    since_seal = 0
    try:
        for n, example in enumerate(todo):
            if deadline is not None and time.monotonic() >= deadline:
                stopped = True
                break
            samples = (example.id, "samples") in shards.done
            best: tuple[int, PendingOutcomes] | None = None
            for attempt in range(tries):
                log = PendingOutcomes(shards)
                lms = {m: _Tracking(shards, m) for m in models_of(task)}
                try:
                    expand(task, space, example, Runtime(lms=lms, max_workers=1, seed=0,
                                                         outcomes=log),
                           {}, samples=samples)
                except ReplayMiss:
                    if attempt == 0:
                        report.retried.append(example.id)
                    continue
                reached = set().union(*(lm.hits for lm in lms.values()))
                left = len(stored.get(example.id, set()) - reached)
                if best is None or left < best[0]:
                    best = (left, log)
                if not left:
                    break
                if attempt == 0:
                    report.retried.append(example.id)
            if best is None:
                report.failed.append(example.id)
                continue
            if best[0]:
                report.unreached[example.id] = best[0]
            best[1].commit()
            shards.mark_pinned(example.id)
            report.pinned_now += 1
            report.outcomes += len(best[1].new)
            since_seal += 1
            if since_seal >= seal_every:
                shards.seal()
                since_seal = 0
            if on_question is not None:
                on_question(example.id, n + 1, len(todo))
    finally:
        shards.close()
    report.pinned = sum(e.id in shards.pinned for e in finished)
    report.stopped_early = stopped
    return report
