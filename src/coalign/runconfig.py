"""The run config: the schema of an optimization job's YAML/JSON file, its loading, and the
loop settings it generates (the one source of the loop's defaults).

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
components: [retriever, answer_generator.model]  # optional subset: components or params
optimizers: {text: opro, weights: reinforce}  # optional: local optimizer per param kind
start:                       # optional starting values (default: the system's own)
  answer_generator: {prompt: "Answer the question using the facts."}
```

Every field (data mappings, endpoint, tracking, executor, per_instance, ...): docs/optimize.md.
``coalign.job.Job`` runs one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
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

from coalign.config import read_text_file
from coalign.data import DataFile
from coalign.errors import ConfigError
from coalign.executors import ExecutorSpec
from coalign.imports import resolve
from coalign.lm import EndpointSettings, redact_url
from coalign.optimize import (
    KINDS,
    LEGACY,
    BudgetSpec,
    Gate,
    LoopSettings,
    ParamKind,
    legacy_conflict,
    optimizer_problem,
)
from coalign.tracking import TrackingSpec


def _gate(name: str) -> Any:
    return Gate.__dataclass_fields__[name].default


def registry(paths: list[str]) -> Mapping[str, ParamKind]:
    """The built-in param kinds plus those at ``paths`` (module:NAME of ``ParamKind`` entries).

    Raises:
        ConfigError: a path that does not import, is no ``ParamKind``, or names a kind twice.
    """
    kinds = dict(KINDS)
    for path in paths:
        kind = resolve(path, "kind")
        if not isinstance(kind, ParamKind):
            raise ConfigError(f"kinds: {path} is a {type(kind).__name__}, expected a "
                              "coalign.optimize.ParamKind")
        if kind.name in kinds:
            raise ConfigError(f"kinds: {path} registers kind {kind.name!r}, which is already "
                              "registered")
        kinds[kind.name] = kind
    return kinds


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
    # the gate's settings default to Gate's own (one source of defaults)
    gate_confidence: float = Field(_gate("confidence"), gt=0, lt=1)  # bootstrap gate
    early_reject: float = Field(_gate("early_reject"), ge=0, lt=1)  # 0: validate fully
    # quality under a cost cap: a step is accepted only if the candidate's mean model seconds
    # per validation query stay within it (see Gate.cost_cap); omit for quality alone
    cost_cap: float | None = Field(None, gt=0)
    proposer: str | None = None
    # optimize only these: components, or single params as component.param (default: all)
    components: list[str] | None = Field(None, min_length=1)
    # superseded by optimizers.text / optimizers.weights; kept so older configs (and their
    # run dirs' digests) stay valid
    text_optimizer: Literal["opro", "pareto"] = "opro"  # pareto: coalign.search beam search
    weights_optimizer: Literal["reinforce", "ppo"] = "reinforce"  # ppo: the PPO-clip surrogate
    # param kinds registered beside the built-in ones: import paths module:NAME of
    # coalign.optimize.ParamKind entries (a kind your own system's params declare)
    kinds: list[str] = []
    # param kind -> local optimizer, e.g. {text: pareto, weights: ppo} (optimize._kinds)
    optimizers: dict[str, str] = {}
    backbone: str = "minilm"
    # True: the local rewards also read the backbone's embedding of (input, output); by
    # default they read only the cheap features, which rank held-out pairs better on both
    # replay tables with the same loop results (docs/rewards.md)
    reward_embedding: bool = False
    # True: a component's declared gold-free checks (code_gen: the code passes the task's
    # example test) add to its local reward at the weight the pairs give them (docs/rewards.md)
    reward_checks: bool = True
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

    @field_validator("kinds")
    @classmethod
    def _importable(cls, paths: list[str]) -> list[str]:
        registry(paths)  # a bad path or a non-ParamKind is refused when the config is read
        return paths

    @field_validator("optimizers")
    @classmethod
    def _registered(cls, chosen: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        kinds = registry(info.data["kinds"]) if "kinds" in info.data else KINDS
        problem = (optimizer_problem(kinds, chosen)
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

    def loop_settings(self, choice_costs: Mapping[tuple[str, str], Mapping[Any, float]]
                      ) -> LoopSettings:
        """The loop's settings: every budget field by name, the gate, the registered kinds.
        ``choice_costs``: the ``choice_costs`` field checked against the task's params."""
        return LoopSettings(**self.budget.model_dump(),
                            gate=Gate(self.gate, confidence=self.gate_confidence,
                                      seed=self.seed, early_reject=self.early_reject,
                                      cost_cap=self.cost_cap),
                            proposer=self.proposer, components=self.components, seed=self.seed,
                            choice_costs=choice_costs, cost_weight=self.cost_weight,
                            optimizers=self.optimizers, text_optimizer=self.text_optimizer,
                            weights_optimizer=self.weights_optimizer,
                            kinds=registry(self.kinds))

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
        raise ConfigError(f"key {repeated!r} is given twice")
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
