"""An optimization job from a run config (``coalign.runconfig``): the system, the data split
and the loop wired together in a run dir; run, resume, evaluate on test, summarize."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalign.backends import build_runtime
from coalign.cascade import (
    Cascade,
    CascadeFit,
    CascadeResult,
    evaluate_cascade,
    fit_cascade,
    validated_configs,
)
from coalign.config import SystemConfig
from coalign.data import Example, split
from coalign.errors import ConfigError
from coalign.executors import make_executor
from coalign.imports import check_metric
from coalign.optimize import Optimizer, Policies, choice_costs, policies_of, policy_suffix
from coalign.rewards import LocalRewardModel, TrainConfig, make_backbone
from coalign.runconfig import (  # noqa: F401  (the schema's names, where callers look)
    DataSpec,
    RunConfig,
    SplitSpec,
    load_run_config,
    parse_run_config,
)
from coalign.runner import CACHE_NAME, EvalResult, evaluate, load_data
from coalign.store import RunStore
from coalign.systems import models_of
from coalign.tables import run_task
from coalign.task import Task


@dataclass
class Job:
    cfg: RunConfig
    task: Task
    train: list[Example]
    val: list[Example]
    test: list[Example]
    store: RunStore
    optimizer: Optimizer
    data_read: str = ""  # what the data was read as (a file's detected format)

    @classmethod
    def open(cls, cfg: RunConfig, run_dir: Path) -> Job:
        """Build (or reopen) the job in ``run_dir``; a different config there is refused.
        The system, metric and data are resolved and checked before the run dir is touched."""
        task, pool = run_task(cfg)
        costs = choice_costs(task, cfg.choice_costs)  # checked before the run dir is touched
        s = cfg.split
        data = cfg.data if isinstance(cfg.data, str) else cfg.data.source()
        examples, data_read = (pool, f"replay table {cfg.lm}") if pool is not None else \
            load_data(data, s.train + s.val + s.test, cfg.seed)
        if len(examples) < s.train + s.val + s.test:
            raise ConfigError(f"dataset {str(cfg.data)!r} has {len(examples)} examples; the "
                              f"split needs {s.train + s.val + s.test}")
        task.check_inputs(examples, repr(str(cfg.data)))
        check_metric(task, examples[0], cfg.system, cfg.metric)
        train, val, test = split(examples, [s.train, s.val, s.test], seed=s.seed)
        created = not run_dir.exists()
        store = RunStore(run_dir)
        try:
            optimizer = _optimizer(cfg, task, train, val, store, costs)
        except BaseException:
            store.close()
            if created:  # a refused config leaves no run dir behind
                shutil.rmtree(run_dir, ignore_errors=True)
            raise
        return cls(cfg, task, train, val, test, store, optimizer, data_read)

    def on_test(self, config: SystemConfig, policies: Policies) -> EvalResult:
        """``config`` (with its per-instance policies) on the test split (stored, resumable)."""
        return evaluate(self.task, self.test, config, self.optimizer.runtime_for(policies),
                        self.store, tag="test" + policy_suffix(policies))

    def fit_cascade(self, depth: int = 1, vary: Sequence[str] | None = None) -> CascadeFit:
        """A cascade answering with the run's config, its fallbacks fitted on the validation
        traces of every config the run validated in full (``coalign.cascade``); with ``vary``
        only configs that differ from it in those ``component.param`` names alone."""
        if self.optimizer.policies:
            raise ConfigError("cascade: the final config chooses a param per input with a "
                              "selector; a cascade runs plain configs")
        return fit_cascade(self.task, self.store, self.optimizer.config,
                           validated_configs(self.task, self.store), depth, vary)

    def cascade_on_test(self, cascade: Cascade) -> CascadeResult:
        """``cascade`` on the test split (each link stored under "test", resumable)."""
        return evaluate_cascade(self.task, self.test, cascade, self.optimizer.runtime_for({}),
                                self.store, tag="test")

    def evaluate_test(self) -> tuple[EvalResult, EvalResult]:
        """Test metric of the unoptimized and the optimized system (stored, resumable)."""
        opt = self.optimizer
        before = self.on_test(self.task.system.default_config(), {})
        after = self.on_test(opt.config, opt.policies)
        self.store.set_meta("result", {"metric": self.task.metric_name,
                                       "before": before.mean_reward, "after": after.mean_reward,
                                       "test_size": len(self.test)})
        return before, after

    def steps_on_test(self) -> list[dict[str, Any]]:
        """Each accepted step's test metric before and after it: does its validation gain hold
        on test? A small validation split accepts noise; this is how to see it. Each config is
        evaluated once (stored), and the response cache re-runs only what a step changed."""
        prev = self.on_test(self.task.system.default_config(), {}).mean_reward
        rows = []
        for t, state, rec in self.store.steps():
            if state != "accepted":
                continue
            config = SystemConfig.from_json(self.task.system, rec["config"])
            after = self.on_test(config, policies_of(rec)).mean_reward  # as validated
            rows.append({"step": t, "component": rec["component"], "param": rec["param"],
                         "val_before": rec["val_before"], "val_after": rec["val_after"],
                         "test_before": prev, "test_after": after, "holds": after > prev})
            prev = after
        return rows


def fit_run_cascade(run_dir: Path, depth: int, vary: Sequence[str] | None = None
                    ) -> CascadeFit:
    """``Job.fit_cascade`` on a run dir read-only (``coalign export --cascade``): the run's
    final config, its validated configs and their stored validation traces."""
    from coalign.optimize import checked_steps

    cfg = resume_config(run_dir)
    task, _ = run_task(cfg)
    with RunStore(run_dir, readonly=True) as store:
        steps = checked_steps(store)
        if not steps:
            raise ConfigError(f"{run_dir} has no optimizer step yet; run or resume it first")
        last = steps[-1][2]
        if policies_of(last):
            raise ConfigError("cascade: the final config chooses a param per input with a "
                              "selector; a cascade runs plain configs")
        final = SystemConfig.from_json(task.system, last["config"])
        return fit_cascade(task, store, final, validated_configs(task, store), depth, vary)


def resume_config(run_dir: Path) -> RunConfig:
    with RunStore(run_dir, readonly=True) as store:
        raw = store.get_meta("run_config")
    if raw is None:
        raise ConfigError(f"{run_dir} has no run config: coalign optimize was not run there, or "
                          "was killed before it wrote one; rerun coalign optimize CONFIG "
                          f"--run-dir {run_dir}")
    return parse_run_config(raw, f"{run_dir} run config")


def _optimizer(cfg: RunConfig, task: Task, train: list[Example], val: list[Example],
               store: RunStore,
               costs: dict[tuple[str, str], dict[Any, float]]) -> Optimizer:
    """Check the run dir against ``cfg``, build the loop, and only then record ``cfg`` there:
    a config refused on the way (an unknown model, a bad component) must not claim the dir."""
    run_dir = store.run_dir
    existing = store.get_meta("run_config_digest")
    if existing is not None and existing != cfg.digest:
        raise ConfigError(f"run dir {run_dir} holds a different run config; use a new "
                          "--run-dir or the same config")
    # the same config names a system whose params may have changed since (a new knob): its
    # stored configs and ledger would not fit the new search space
    space = {c.name: {p: spec.space() for p, spec in c.params.items()}
             for c in task.system.components}
    known = store.get_meta("system_space")
    if known is not None and known != space:
        raise ConfigError(f"run dir {run_dir} was made for a {cfg.system!r} with other "
                          "params; use a new --run-dir")
    models = sorted(set(models_of(task)) | ({cfg.proposer} if cfg.proposer else set()))
    executor = None if cfg.lm is not None else make_executor(cfg.executor, cfg.workers,
                                                             cfg.endpoint)
    runtime, _ = build_runtime(models, run_dir / CACHE_NAME, max_workers=cfg.workers,
                               seed=cfg.seed, lm=cfg.lm, endpoint=cfg.endpoint,
                               executor=executor)
    reward = LocalRewardModel(make_backbone(cfg.backbone),
                              {c.name: c.description for c in task.system.components},
                              TrainConfig(use_embedding=cfg.reward_embedding,
                                          use_checks=cfg.reward_checks),
                              {c.name: c.checks for c in task.system.components})
    optimizer = Optimizer(task, train, val, runtime, store, reward, cfg.loop_settings(costs))
    with store.transaction():
        store.set_meta("system_space", space)
        store.set_meta("run_config", cfg.redacted().model_dump())
        store.set_meta("run_config_digest", cfg.digest)
        store.set_meta("system", cfg.system)
    return optimizer
