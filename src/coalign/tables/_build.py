"""Building a replay table: the prefix tree of every component's outputs, question by question.

For one question the tree is expanded component by component in topological order: every node
(the fields computed so far) runs the next component under each of its candidate values, greedy,
and, on a path no sample has touched yet, ``samples.n`` temperature draws per value (what a
Monte-Carlo rollout of that component draws; its downstream completions are the greedy subtree).
A shared upstream is computed once: identical requests are answered from the table. A question
is marked done only when its whole tree is stored, so a killed build redoes no call and a
resumed one walks the finished part from the table in milliseconds.

Calls run with prefix reuse: the candidates of one node share its inputs as a prompt prefix, and
the samples of one value follow its greedy call back to back, so the shared part is evaluated
once. Reuse is chunk-aligned (``coalign.lm._prefill``), so an output is the one a live call from
an empty KV cache gives, whatever was built before it (tables built before that change differ
from live in a few percent of outputs, measured by ``benchmarks/replay_check.py``).

With an executor that has several model replicas (Ray actors), questions are expanded in
parallel, each on one replica from start to end (its calls reuse one KV cache); this
process alone writes the shards and marks questions done, in pool order.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalign.config import SystemConfig
from coalign.data import Example
from coalign.errors import ConfigError
from coalign.executors import BaseExecutor, SerialExecutor, ThreadExecutor, WorkerLost
from coalign.lm import LM
from coalign.runtime import Runtime, Sampling
from coalign.systems import models_of
from coalign.tables._outcomes import TableOutcomes
from coalign.tables._replay import RecordingLM
from coalign.tables._shards import LEVELS, Done, Entry, ShardSet
from coalign.tables._space import CandidateSpace
from coalign.task import Task


def pool_examples(space: CandidateSpace) -> list[Example]:
    """The space's question pool, in its order, from the space's dataset."""
    from coalign.runner import load_dataset

    by_id = {e.id: e for e in load_dataset(space.dataset)}
    missing = [q for q in space.questions if q not in by_id]
    if missing:
        raise ConfigError(f"space: {len(missing)} pool question(s) not in dataset "
                          f"{space.dataset!r}, e.g. {missing[0]!r}")
    return [by_id[q] for q in space.questions]


def live_lm(model: str) -> LM:
    from coalign.lm import LlamaCpp

    return LlamaCpp(model, reuse_prefix=True)


@dataclass
class BuildReport:
    done: int  # questions complete in the table (all of them, not only this run's)
    total: int
    built_now: int
    llm_calls: int  # calls made by this run
    llm_s: float
    shards_written: list[Path]
    stopped_early: bool
    reused: int = 0  # responses copied from donor tables (``reuse``) instead of called


def expand(task: Task, space: CandidateSpace, example: Example, runtime: Runtime,
           recorders: Mapping[str, RecordingLM], *, samples: bool = True) -> int:
    """Compute the whole prefix tree of ``example`` (without temperature samples unless
    ``samples``); returns the number of full paths."""
    system = task.system
    nodes: list[tuple[dict[str, Any], bool]] = [({f: example.inputs[f] for f in system.inputs},
                                                 False)]
    for name in system.order:
        comp = system.component(name)
        configs = [SystemConfig(system, {name: v}) for v in space.component_values(task, name)]
        configs = configs or [system.default_config()]
        draws = space.samples.n if samples and getattr(comp, "model", None) is not None else 0
        for rec in recorders.values():
            rec.component, rec.question = name, example.id
        children: list[tuple[dict[str, Any], bool]] = []
        for fields, sampled in nodes:
            x = {f: fields[f] for f in comp.inputs}
            x.update({f: fields.get(f) for f in comp.optional_inputs})
            for cfg in configs:
                step = system.run_component(name, x, cfg, runtime, example_id=example.id)
                children.append(({**fields, **step.outputs}, sampled))
                for i in range(0 if sampled else draws):
                    step = system.run_component(
                        name, x, cfg, runtime, example_id=example.id,
                        sampling=Sampling(space.samples.temperature, i))
                    children.append(({**fields, **step.outputs}, True))
        nodes = children
    return len(nodes)


def build_table(directory: Path, *, level: str = "greedy", minutes: float | None = None,
                limit: int | None = None, seal_every: int = 5,
                part: tuple[int, int] = (0, 1),
                lm_factory: Callable[[str], LM] = live_lm,
                on_question: Callable[[Done, int, int], None] | None = None,
                executor: BaseExecutor | None = None,
                reuse: Sequence[Path] = ()) -> BuildReport:
    """Extend the table in ``directory`` question by question to ``level`` (``greedy``: every
    config's outputs; ``samples``: also the temperature samples) until done, ``limit`` new
    questions, or ``minutes`` (checked before each question; a question is never left
    half-marked).

    A shard is sealed every ``seal_every`` finished questions and at the end. ``part=(i, n)``
    builds only the pool's questions i, i + n, ...: n processes share a build (each model
    replica with its own journal; questions share no LLM call). ``executor`` supplies the model
    replicas (``lm_factory`` runs on them): one in this process by default, one per actor on Ray.
    ``reuse``: donor table directories (``donor_entries``) whose identical requests are copied
    in rather than called: a wider space rebuilt beside a narrower one pays only for its new
    calls.
    """
    if not 0 <= part[0] < part[1]:
        raise ConfigError(f"build part {part[0]}/{part[1]}: expected 0 <= i < n")
    if level not in LEVELS:
        raise ConfigError(f"table level must be one of {list(LEVELS)}, got {level!r}")
    space = CandidateSpace.load(directory)
    task = space.task()
    examples = pool_examples(space)[part[0]::part[1]]
    donors = donor_entries(space, reuse)
    shards = ShardSet(directory, space.system, space.digest, writer=True)
    written = list(shards.shard_files)
    models = models_of(task)
    replicas = {m: (executor or SerialExecutor()).replicas(m, lm_factory) for m in models}
    builders = _Builders(
        [{m: RecordingLM(shards, replicas[m][i], m, donors) for m in models}
         for i in range(min(len(r) for r in replicas.values()))],
        lambda: {m: RecordingLM(shards, lm_factory(m), m, donors) for m in models})
    todo = [e for e in examples if not shards.is_done(e.id, level)]
    stopped = limit is not None and len(todo) > limit
    todo = todo[:limit]
    deadline = time.monotonic() + minutes * 60 if minutes is not None else None

    def one(example: Example) -> Done | None:
        if deadline is not None and time.monotonic() >= deadline:
            return None
        return builders.build(lambda recorders: _question(task, space, example, recorders,
                                                          level))

    built = calls = 0
    llm_s = 0.0
    since_seal = 0
    try:
        for done in ThreadExecutor(builders.size).map(one, todo):
            if done is None:
                stopped = True
                continue
            shards.mark_done(done)
            shards.mark_pinned(done.question)  # its walk logged every outcome it met
            built, calls, llm_s = built + 1, calls + done.llm_calls, llm_s + done.llm_s
            since_seal += 1
            if since_seal >= seal_every:
                shards.seal()
                since_seal = 0
            if on_question is not None:
                on_question(done, sum(shards.is_done(e.id, level) for e in examples),
                            len(examples))
    finally:
        shards.seal()
        builders.close()
    new = [p for p in shards.shard_files if p not in written]
    n_done = sum(shards.is_done(e.id, level) for e in examples)
    return BuildReport(n_done, len(examples), built, calls, llm_s, new, stopped,
                       builders.reused())


def donor_entries(space: CandidateSpace, reuse: Sequence[Path]) -> list[Mapping[str, Entry]]:
    """The responses of each donor table, refused in one line unless it runs the same system
    with the same request-shaping options (the prompt layout among them) on models this table
    also has (a response is keyed by its model, so a one-model table can donate to a
    model-choice one). Candidate lists (``ks``, ``query_sources``) may differ: a response is
    keyed by its whole request, so a donor with other candidates donates the requests the two
    share. Only tables built with chunk-aligned prefix reuse should donate: an older table's
    few outputs that differ from a live call would carry over."""
    out = []
    for path in reuse:
        donor = CandidateSpace.load(Path(path))
        for what, mine, theirs in (("system", space.system, donor.system),
                                   ("options", _shaping(space), _shaping(donor))):
            if mine != theirs:
                raise ConfigError(f"--reuse {path}: its {what} {theirs!r} differs from this "
                                  f"table's {mine!r}")
        extra = sorted(set(donor.models) - set(space.models))
        if extra:
            raise ConfigError(f"--reuse {path}: it runs model(s) {extra} that this table "
                              f"does not ({list(space.models)})")
        out.append(ShardSet(Path(path), donor.system, donor.digest).entries)
    return out


def _shaping(space: CandidateSpace) -> dict[str, Any]:
    """The options that shape a request (not lists of candidates, not the models)."""
    return {k: v for k, v in space.options.items()
            if k != "models" and not isinstance(v, (list, tuple))}


def _question(task: Task, space: CandidateSpace, example: Example,
              recorders: Mapping[str, RecordingLM], level: str) -> Done:
    """Expand one question with one set of recorders (one replica of each model)."""
    before = [(r.calls, r.llm_s) for r in recorders.values()]
    shards = next(iter(recorders.values())).shards
    runtime = Runtime(lms=recorders, max_workers=1, seed=0,
                      outcomes=TableOutcomes(shards, write=True))
    paths = expand(task, space, example, runtime, recorders, samples=level == "samples")
    q_calls = sum(r.calls - c for r, (c, _) in zip(recorders.values(), before, strict=True))
    q_s = sum(r.llm_s - s for r, (_, s) in zip(recorders.values(), before, strict=True))
    return Done(example.id, paths, q_calls, q_s, level)


class _Builders:
    """Recorder sets, one per model replica; a question holds one set while it is expanded. A
    set whose worker died is dropped and its question redone on another (its finished calls
    are table hits by then); with none left, this process builds on with its own model."""

    def __init__(self, sets: list[dict[str, RecordingLM]],
                 local: Callable[[], dict[str, RecordingLM]]) -> None:
        self.size = len(sets)
        self._all = list(sets)
        self._free: queue.Queue[dict[str, RecordingLM]] = queue.Queue()
        for recorders in sets:
            self._free.put(recorders)
        self._live = len(sets)
        self._local = local
        self._lock = threading.Lock()

    def build(self, fn: Callable[[dict[str, RecordingLM]], Done]) -> Done:
        while True:
            recorders = self._free.get()
            try:
                done = fn(recorders)
            except WorkerLost:
                with self._lock:
                    self._live -= 1
                    if self._live == 0:
                        fresh = self._local()
                        self._all.append(fresh)
                        self._free.put(fresh)
                        self._live = 1
                continue
            except BaseException:
                self._free.put(recorders)
                raise
            self._free.put(recorders)
            return done

    def reused(self) -> int:
        return sum(rec.reused for recorders in self._all for rec in recorders.values())

    def close(self) -> None:
        for recorders in self._all:
            for rec in recorders.values():
                rec.close()
