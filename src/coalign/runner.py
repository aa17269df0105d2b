"""Running a task over a dataset with persistence: resumable, cached, and accounted.

``evaluate`` stores each finished trace in the run store in its own transaction and reuses stored
traces on a rerun; together with the SQLite response cache in the run directory, a run killed at
any moment and started again repeats no LLM call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.data import (
    DataFile,
    Example,
    load_amazon_sessions,
    load_file,
    load_hotpotqa,
    load_mbpp,
    load_musique,
    load_pubmedqa,
    make_world,
)
from coalign.data import load_jsonl_examples as load_jsonl_examples  # its old home
from coalign.errors import ConfigError
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.task import Task
from coalign.trace import Trace, Usage

CACHE_NAME = "lm_cache.sqlite"


DATASETS: dict[str, Callable[[int | None, int], list[Example]]] = {
    "world": lambda limit, seed: make_world(seed=seed, n_questions=limit or 100),
    "hotpotqa": lambda limit, seed: load_hotpotqa(limit=limit),
    "musique": lambda limit, seed: load_musique(limit=limit),
    "pubmedqa": lambda limit, seed: load_pubmedqa(limit=limit),
    "mbpp": lambda limit, seed: load_mbpp(limit=limit),  # the sanitized test split
    # every session (train, val, test in turn): a run config draws its own split from them
    "amazon": lambda limit, seed: load_amazon_sessions(split=None, limit=limit),
}


def load_dataset(spec: str | DataFile, limit: int | None = None, seed: int = 0
                 ) -> list[Example]:
    """A named dataset (a key of ``DATASETS``) or a file: see ``load_data``."""
    return load_data(spec, limit, seed)[0]


def load_data(spec: str | DataFile, limit: int | None = None, seed: int = 0
              ) -> tuple[list[Example], str]:
    """A named dataset or a file in any format ``coalign.data`` reads (told from its content;
    ``DataFile.fields`` maps any other JSONL), with what was read: the name, or the file and
    its detected format."""
    if isinstance(spec, str) and spec in DATASETS:
        return DATASETS[spec](limit, seed), spec
    source = spec if isinstance(spec, DataFile) else DataFile(Path(spec))
    if isinstance(spec, str) and source.path.suffix not in (".json", ".jsonl") \
            and not source.path.exists():
        raise ConfigError(f"unknown dataset {spec!r}; use one of {sorted(DATASETS)} or a "
                          ".json/.jsonl path")
    examples, described = load_file(source, limit)
    return examples, f"{source.path} read as {described}"


@dataclass
class EvalResult:
    traces: list[Trace]
    mean_reward: float
    wall_s: float
    resumed: int  # examples whose stored trace was reused
    usage: Usage = field(default_factory=Usage)  # LLM calls made now (cache hits counted apart)
    equiv_runs: float = 0.0

    @property
    def scores(self) -> list[float]:
        """Per-example reward, in example order (unscored counts as 0)."""
        return [t.reward or 0.0 for t in self.traces]

    @property
    def cost_per_query_s(self) -> float:
        """Mean model seconds per example of the configuration (``Trace.cost_s``)."""
        return sum(t.cost_s() for t in self.traces) / len(self.traces) if self.traces else 0.0

    def summary(self) -> dict[str, Any]:
        return {"examples": len(self.traces), "mean_reward": self.mean_reward,
                "cost_per_query_s": round(self.cost_per_query_s, 3),
                "llm_calls": self.usage.calls, "cache_hits": self.usage.cache_hits,
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                "equiv_runs": self.equiv_runs, "resumed": self.resumed, "wall_s": self.wall_s}


def evaluate(task: Task, examples: Sequence[Example], config: SystemConfig, runtime: Runtime,
             store: RunStore | None = None, *, tag: str = "eval",
             on_done: Callable[[Trace], None] | None = None) -> EvalResult:
    """Run and score ``examples``; each finished trace is committed before the next is counted."""
    t0 = time.perf_counter()
    if store is not None:
        store.save_config(config.digest, config.to_json())
    done: dict[str, Trace] = {}
    todo: list[Example] = []
    for e in examples:
        stored = store.get_trace(tag, e.id, config.digest) if store is not None else None
        if stored is not None:
            done[e.id] = stored
        else:
            todo.append(e)
    resumed = len(done)
    account = CostAccount([c.name for c in task.system.components])

    def one(e: Example) -> Trace:
        trace = task.score(task.system.run(e.id, e.inputs, config, runtime), e)
        if store is not None:
            with store.transaction():  # trace and its cost land together or not at all
                store.put_trace(tag, trace)
                for comp in task.system.order:
                    store.add_cost(comp, tag, trace.usage(comp))
        if on_done is not None:
            on_done(trace)
        return trace

    for trace in runtime.map(one, todo):
        done[trace.example_id] = trace
    fresh = [done[e.id] for e in todo]
    account.add_traces(tag, fresh)
    traces = [done[e.id] for e in examples]
    mean = sum(t.reward or 0.0 for t in traces) / len(traces) if traces else 0.0
    return EvalResult(traces, mean, time.perf_counter() - t0, resumed,
                      account.total_usage(tag), account.equivalent_runs(tag))
