"""An optimization job from a YAML/JSON file: system, data split, budget; run, resume, summarize.

```yaml
system: multihop_qa          # a name from coalign.systems, or module:factory (your code)
metric: f1                   # optional: f1 | em | accuracy | module:function
model: qwen2.5-0.5b          # task model (name or spec)
data: world                  # world | hotpotqa | musique | pubmedqa | mbpp | FILE (format detected)
split: {train: 12, val: 8, test: 20, seed: 0}
budget: {iterations: 4, search_size: 4, fresh_inputs: 4, rollout_n: 3}
gate: strict                 # or bootstrap
early_reject: 0.9            # optional: stop validating a candidate that is clearly worse so far
proposer: qwen2.5-0.5b       # LM proposing instructions (omit to use edits and demos only)
components: [retriever, answer_generator]   # optional subset to optimize
optimizers: {text: opro, weights: reinforce}  # optional: local optimizer per param kind
start:                       # optional starting values (default: the system's own)
  answer_generator: {prompt: "Answer the question using the facts."}
```

Every field (data mappings, endpoint, tracking, executor, per_instance, ...): docs/optimize.md.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from coalign.config import SystemConfig, read_text_file
from coalign.data import Example, split
from coalign.data._files import DataFile
from coalign.errors import ConfigError
from coalign.executors import ExecutorSpec, make_executor
from coalign.imports import check_metric, load_task
from coalign.lm import EndpointSettings, redact_url
from coalign.optimize import Gate, LoopSettings, Optimizer
from coalign.optimize._budget import BudgetSpec  # the budget block: the loop's defaults
from coalign.optimize._costs import choice_costs
from coalign.optimize._kinds import KINDS, optimizer_problem
from coalign.optimize._local import LEGACY, legacy_conflict
from coalign.optimize._selectors import Policies, policies_of, policy_suffix
from coalign.rewards import LocalRewardModel, TrainConfig, make_backbone
from coalign.runner import CACHE_NAME, EvalResult, build_runtime, evaluate, load_data
from coalign.store import RunStore
from coalign.systems import models_of
from coalign.task import Task
from coalign.tracking import TrackingSpec


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Counts(BaseModel):
    # strict: YAML's `yes` is no iteration count, nor is 1.5 a split size
    model_config = ConfigDict(extra="forbid", strict=True)


class SplitSpec(_Counts):
    train: int = Field(12, ge=1)
    val: int = Field(8, ge=1)
    test: int = Field(20, ge=1)
    seed: int = 0


class DataSpec(_Strict):
    """A dataset file with how to read it (see ``coalign.data.DataFile``)."""

    path: str = Field(min_length=1)
    fields: dict[str, str] | None = Field(None, min_length=1)  # system input/target/id -> row
    ground_truth: str | None = None  # PubMedQA: {PMID: label} file (e.g. test_ground_truth.json)

    def source(self) -> DataFile:
        return DataFile(Path(self.path), self.fields,
                        None if self.ground_truth is None else Path(self.ground_truth))

    def __str__(self) -> str:
        return self.path


# a name or a file mapping; the tags keep pydantic from reporting both shapes' errors (and are
# left out of the field named in a message)
_DATA_TAGS = ("name", "file")
DataField = Annotated[Annotated[str, Tag("name")] | Annotated[DataSpec, Tag("file")],
                      Discriminator(lambda v: "file" if isinstance(v, dict | DataSpec)
                                    else "name")]


class RunConfig(_Strict):
    system: str = "multihop_qa"  # a name in coalign.systems.SYSTEMS or module:factory
    metric: str | None = None  # f1 | em | accuracy | module:function; default: the system's
    model: str = "qwen2.5-0.5b"
    # each LLM component of a built-in system chooses its model among these (starting at
    # `model`); e.g. [qwen2.5-0.5b, qwen2.5-1.5b]
    models: list[str] | None = Field(None, min_length=2)
    data: DataField = "world"
    split: SplitSpec = SplitSpec()
    budget: BudgetSpec = BudgetSpec()
    gate: Literal["strict", "bootstrap"] = "strict"
    gate_confidence: float = Field(0.9, gt=0, lt=1)  # see Gate.confidence (bootstrap gate)
    early_reject: float = Field(0.0, ge=0, lt=1)  # see Gate.early_reject; 0: validate fully
    # quality under a cost cap: a step is accepted only if the candidate's mean model seconds
    # per validation query stay within it (see Gate.cost_cap); omit for quality alone
    cost_cap: float | None = Field(None, gt=0)
    proposer: str | None = None
    # optimize only these (default: all with params)
    components: list[str] | None = Field(None, min_length=1)
    # superseded by optimizers.text / optimizers.weights; kept so older configs (and their
    # run dirs' digests) stay valid
    text_optimizer: Literal["opro", "pareto"] = "opro"  # pareto: coalign.search beam search
    weights_optimizer: Literal["reinforce", "ppo"] = "reinforce"  # ppo: the PPO-clip surrogate
    # param kind -> local optimizer, e.g. {text: pareto, weights: ppo} (optimize._kinds)
    optimizers: dict[str, str] = {}
    backbone: str = "minilm"
    # True: the local rewards also read the backbone's embedding of (input, output); by
    # default they read only the cheap features, which rank held-out pairs better on both
    # replay tables with the same loop results (docs/rewards.md)
    reward_embedding: bool = False
    start: dict[str, dict[str, Any]] = {}  # component -> param -> starting value (JSON form)
    # "component.param" of a per-instance Choice -> option -> relative cost per call
    per_instance: list[str] = []  # component.param Choice params chosen per input
    choice_costs: dict[str, dict[str, float]] = {}
    cost_weight: float = Field(0.0, ge=0)  # local-reward units given up per unit of cost
    seed: int = Field(0, strict=True)
    workers: int = Field(1, ge=1, strict=True)
    # "replay:DIR": every LLM call answered by the replay table in DIR (docs/tables.md); the
    # system, its candidate values and the question pool are then the table's
    lm: str | None = None
    # how openai: models are called; not part of the digest: a resumed run may change them
    endpoint: EndpointSettings = EndpointSettings()
    # where the run is mirrored (e.g. {mlflow: sqlite:///mlflow.db}); not part of the digest
    # either: tracking can be added to, or moved for, a run dir that exists
    tracking: TrackingSpec = TrackingSpec()
    # where model calls run ({ray: ADDRESS}: Ray actors); not in the digest: a run may be
    # resumed on another machine or cluster
    executor: ExecutorSpec = ExecutorSpec()

    @field_validator("optimizers")
    @classmethod
    def _registered(cls, chosen: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        problem = (optimizer_problem(KINDS, chosen)
                   or legacy_conflict({f: info.data[f] for f in LEGACY if f in info.data},
                                      chosen))
        if problem:  # a custom error: its message is shown as is, without "Value error, "
            raise PydanticCustomError("optimizers", problem)
        return chosen

    @property
    def digest(self) -> str:
        # defaults left out: a setting added later (with its default) keeps old run dirs valid
        dump = self.redacted().model_dump_json(exclude_defaults=True,
                                                exclude={"endpoint", "tracking",
                                                         "executor"})
        return hashlib.sha256(dump.encode()).hexdigest()

    def redacted(self) -> RunConfig:
        """This config without keys in model URLs (``http://user:key@host``): what a run dir
        stores. A run resumed from it reaches such an endpoint only with ``coalign optimize``."""
        mlflow = self.tracking.mlflow and redact_url(self.tracking.mlflow)
        return self.model_copy(update={
            "model": redact_url(self.model),
            "proposer": self.proposer and redact_url(self.proposer),
            "tracking": self.tracking.model_copy(update={"mlflow": mlflow})})


def load_run_config(path: Path) -> RunConfig:
    text = read_text_file(path, "run config")
    try:
        raw = (yaml.load(text, _UniqueKeyLoader) if path.suffix in (".yaml", ".yml")
               else json.loads(text, object_pairs_hook=_unique_keys))
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: JSON, or a key given twice
        raise ConfigError(f"run config {path} is not valid YAML/JSON: {exc}".splitlines()[0]) \
            from None
    if not isinstance(raw, dict):  # an empty file must not start a run with every default
        got = "an empty file" if raw is None else f"a {type(raw).__name__}"
        raise ConfigError(f"run config {path}: expected a mapping of settings such as "
                          f"'system: multihop_qa', got {got}")
    return parse_run_config(raw, str(path))


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys differ: json and PyYAML both keep a repeated key's last value
    without a word, so a hand-edited config could run with a setting its author did not see."""
    keys = [k for k, _ in pairs]
    repeated = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
    if repeated is not None:
        raise ValueError(f"key {repeated!r} is given twice")
    return dict(pairs)


class _UniqueKeyLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        # own keys only: a key that overrides one merged in by `<<:` is no repeat
        _unique_keys([(self.construct_object(k, deep=deep), None) for k, _ in node.value
                      if k.tag != "tag:yaml.org,2002:merge"])
        return super().construct_mapping(node, deep=deep)


def parse_run_config(raw: Any, where: str = "run config") -> RunConfig:
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"] if p not in _DATA_TAGS) or "(root)"
        raise ConfigError(f"{where}: field {loc!r}: {err['msg']}") from None


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
        task, pool = _replay_task(cfg) if cfg.lm is not None else (
            load_task(cfg.system, cfg.model, cfg.metric, cfg.models), None)
        for field, apply in (("start", task.system.set_defaults),
                             ("per_instance", task.system.set_per_instance)):
            try:
                apply(getattr(cfg, field))
            except ConfigError as exc:
                raise ConfigError(f"run config field {field!r}: {exc}") from None
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


def resume_config(run_dir: Path) -> RunConfig:
    with RunStore(run_dir, readonly=True) as store:
        raw = store.get_meta("run_config")
    if raw is None:
        raise ConfigError(f"{run_dir} has no run config: it was not made by coalign optimize")
    return parse_run_config(raw, f"{run_dir} run config")


def _replay_task(cfg: RunConfig) -> tuple[Task, list[Example]]:
    """The table's system (each tabled param limited to its candidates) and question pool."""
    from coalign.runner import REPLAY
    from coalign.tables import CandidateSpace, check_policy_samples, pool_examples

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
        from coalign.tables import ShardSet

        shards = ShardSet(Path(cfg.lm[len(REPLAY):]), space.system, space.digest)
        have = sum(shards.is_done(e.id, "samples") for e in pool)
        if have < len(pool):
            raise ConfigError(f"run config field 'budget.rollout_n': the replay table holds "
                              f"temperature samples for {have} of its {len(pool)} questions; "
                              "use rollout_n: 0 (candidates only) or build --level samples")
    return task, pool


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
                              TrainConfig(use_embedding=cfg.reward_embedding))
    settings = LoopSettings(**cfg.budget.model_dump(),  # every budget field, by name
                            gate=Gate(cfg.gate, confidence=cfg.gate_confidence,
                                      seed=cfg.seed, early_reject=cfg.early_reject,
                                      cost_cap=cfg.cost_cap),
                            proposer=cfg.proposer, components=cfg.components, seed=cfg.seed,
                            choice_costs=costs, cost_weight=cfg.cost_weight,
                            optimizers=cfg.optimizers, text_optimizer=cfg.text_optimizer,
                            weights_optimizer=cfg.weights_optimizer)
    optimizer = Optimizer(task, train, val, runtime, store, reward, settings)
    with store.transaction():
        store.set_meta("system_space", space)
        store.set_meta("run_config", cfg.redacted().model_dump())
        store.set_meta("run_config_digest", cfg.digest)
        store.set_meta("system", cfg.system)
    return optimizer
