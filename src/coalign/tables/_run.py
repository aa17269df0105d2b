"""A run config on a replay table: the table's system and pool, and the checks that a run
config's settings fit what the table holds."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coalign.data import Example
from coalign.errors import ConfigError
from coalign.runtime import Runtime
from coalign.tables._build import pool_examples
from coalign.tables._outcomes import TableOutcomes
from coalign.tables._policy import check_policy_samples
from coalign.tables._shards import ShardSet
from coalign.tables._space import CandidateSpace
from coalign.tables._table import Table
from coalign.task import Task

if TYPE_CHECKING:
    from coalign.runconfig import RunConfig


REPLAY = "replay:"  # an lm spec naming a replay table: replay:DIR


def replay_runtime(lm: str, models: Sequence[str], **kwargs: Any) -> Runtime:
    """A runtime answering ``models`` from the replay table ``lm`` (``replay:DIR``), with its
    pinned step outcomes; ``kwargs`` go to ``Runtime``."""
    table = Table(lm[len(REPLAY):])
    lms = table.lms()
    missing = sorted(set(models) - set(lms))
    if missing:
        raise ConfigError(f"replay table {table.directory} holds no answers of model(s) "
                          f"{missing}; it covers {sorted(lms)}")
    return Runtime(lms={m: lms[m] for m in models}, outcomes=TableOutcomes(table.shards),
                   **kwargs)


def run_task(cfg: RunConfig) -> tuple[Task, list[Example] | None]:
    """The run config's task with its ``start`` and ``per_instance`` applied, and on replay
    (``lm: replay:DIR``) the table's pool (None otherwise)."""
    from coalign.imports import load_task

    task, pool = replay_task(cfg) if cfg.lm is not None else (
        load_task(cfg.system, cfg.model, cfg.metric, cfg.models), None)
    for field, apply in (("start", task.system.set_defaults),
                         ("per_instance", task.system.set_per_instance)):
        try:
            apply(getattr(cfg, field))
        except ConfigError as exc:
            raise ConfigError(f"run config field {field!r}: {exc}") from None
    return task, pool


def replay_task(cfg: RunConfig) -> tuple[Task, list[Example]]:
    """The table's system (each tabled param limited to its candidates) and question pool, for
    a run config with ``lm: replay:DIR``; run config fields that replay cannot honour are
    refused in one line."""
    if cfg.lm is None or not cfg.lm.startswith(REPLAY):
        raise ConfigError(f"run config field 'lm': expected replay:DIR, got {cfg.lm!r}")
    space = CandidateSpace.load(Path(cfg.lm[len(REPLAY):]))
    if space.system != cfg.system or space.dataset != cfg.data:
        raise ConfigError(f"run config: replay table {cfg.lm[len(REPLAY):]} holds "
                          f"{space.system} on {space.dataset}, not {cfg.system} on {cfg.data}")
    if cfg.metric is not None:
        raise ConfigError("run config: 'metric' is not used on replay (the table's rewards "
                          "are its system's metric); remove it")
    if cfg.models is not None:
        raise ConfigError("run config: 'models' is not used on replay (the table's space "
                          "decides which models each component chooses among); remove it")
    if cfg.proposer is not None:
        raise ConfigError("run config: 'proposer' is not used on replay (text params choose "
                          "among the table's candidates); remove it")
    n = cfg.budget.rollout_n
    if n > space.samples.n:
        raise ConfigError(f"run config field 'budget.rollout_n': {n} samples per rollout, the "
                          f"replay table holds {space.samples.n}; use rollout_n: "
                          f"{space.samples.n} or 0")
    if cfg.budget.completions > 1:  # tables hold one greedy completion per path
        raise ConfigError("run config field 'budget.completions': a replay table holds one "
                          "greedy downstream completion per path; use completions: 1")
    task = space.task()
    if cfg.budget.policy_samples:
        check_policy_samples(task)
    pool = pool_examples(space)
    if n:
        shards = ShardSet(Path(cfg.lm[len(REPLAY):]), space.system, space.digest)
        have = sum(shards.is_done(e.id, "samples") for e in pool)
        if have < len(pool):
            raise ConfigError(f"run config field 'budget.rollout_n': the replay table holds "
                              f"temperature samples for {have} of its {len(pool)} questions; "
                              "use rollout_n: 0 (candidates only) or build --level samples")
    return task, pool
