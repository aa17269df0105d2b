"""The candidate space of a replay table: a finite set of values per param, fixed once.

A space names a ready-made system (and the options it is built with), a question pool from a
dataset, the candidate values of each tabled param (``"component.param"`` -> JSON values, the
system's starting value first), and how many temperature samples each LLM component gets. Its
digest covers everything that decides which LLM requests the table holds except the pool, so a
pool can grow without invalidating shards, while a shard from another space is refused.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coalign.config import SystemConfig
from coalign.errors import ConfigError
from coalign.files import write_atomic
from coalign.pairs import canonical_json
from coalign.params import Choice, Text
from coalign.systems import code_gen, multihop_qa, next_item, pubmedqa_select
from coalign.task import Task

FORMAT = 1
SPACE_FILE = "space.json"

# Systems a table can be built for, with the keyword options the space may set.
SYSTEMS: dict[str, Callable[..., Task]] = {
    "multihop_qa": multihop_qa,
    "pubmedqa_select": pubmedqa_select,
    "code_gen": code_gen,
    "next_item": next_item,
}


@dataclass(frozen=True)
class Samples:
    """Temperature samples per LLM component and value, drawn where rollouts draw them: a loop
    on replay can use ``rollout_n <= n``; the temperature is the loop's rollout temperature."""

    n: int = 2
    temperature: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "temperature": self.temperature}


@dataclass(frozen=True)
class CandidateSpace:
    """What a table covers. ``params`` maps ``"component.param"`` to its candidate JSON values;
    ``notes`` records how each candidate was made (provenance, not part of the digest)."""

    system: str
    dataset: str
    questions: tuple[str, ...]
    params: Mapping[str, tuple[Any, ...]]
    model: str = "qwen2.5-0.5b"
    options: Mapping[str, Any] = field(default_factory=dict)
    samples: Samples = Samples()
    notes: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.system not in SYSTEMS:
            raise ConfigError(f"space: unknown system {self.system!r}; tables support "
                              f"{sorted(SYSTEMS)}")
        if not self.questions or len(set(self.questions)) != len(self.questions):
            raise ConfigError("space: 'questions' must be a non-empty list of distinct ids")
        if self.samples.n < 0 or self.samples.temperature <= 0:
            raise ConfigError("space: samples need n >= 0 and temperature > 0")
        task = self.task(finite=False)
        for key, values in self.params.items():
            comp, _, pname = key.partition(".")
            specs = task.system.component(comp).params
            if pname not in specs:
                raise ConfigError(f"space: component {comp!r} has no param {pname!r}; it has "
                                  f"{sorted(specs) or 'none'}")
            if not values or len({canonical_json(v) for v in values}) != len(values):
                raise ConfigError(f"space: {key} needs distinct candidate values")
            start = canonical_json(specs[pname].to_json(specs[pname].default))
            if canonical_json(values[0]) != start:
                raise ConfigError(f"space: the first value of {key} must be the system's "
                                  "starting value")
            for v in values:
                specs[pname].from_json(v)  # refuses a value the param cannot take

    # -- identity -------------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return {"format": FORMAT, "system": self.system, "model": self.model,
                "options": dict(self.options), "dataset": self.dataset,
                "params": {k: list(v) for k, v in sorted(self.params.items())},
                "samples": self.samples.to_json()}

    @property
    def digest(self) -> str:
        return hashlib.sha256(canonical_json(self.identity()).encode("utf-8")).hexdigest()[:16]

    # -- the system and its configurations -----------------------------------------------------

    def task(self, finite: bool = True) -> Task:
        """The system with the space's options. ``finite``: each tabled param takes only its
        candidate values (``Text`` candidates, ``Choice`` options) and an untabled ``Text`` or
        ``Choice`` only its start (a model Choice the space leaves out, say), so optimizers and
        baselines search the space the table answers; other kinds (a decider's ``Weights``)
        stay trainable."""
        try:
            task = SYSTEMS[self.system](self.model, **_tuples(self.options))
        except TypeError as exc:
            raise ConfigError(f"space: bad options for {self.system} ({exc})") from None
        if not finite:
            return task
        fixed = {f"{comp.name}.{pname}": (spec.to_json(spec.default),)
                 for comp in task.system.components for pname, spec in comp.params.items()
                 if f"{comp.name}.{pname}" not in self.params and isinstance(spec, Text | Choice)}
        for key, values in {**self.params, **fixed}.items():
            comp, _, pname = key.partition(".")
            params = task.system.component(comp).params
            spec = params.get(pname)
            if isinstance(spec, Text):
                params[pname] = Text(spec.default, max_demos=spec.max_demos, scope=spec.scope,
                                     description=spec.description,
                                     candidates=[spec.from_json(v) for v in values])
            elif isinstance(spec, Choice):
                params[pname] = Choice([spec.from_json(v) for v in values], spec.default,
                                       scope=spec.scope, description=spec.description)
        return task

    def component_values(self, task: Task, component: str) -> list[dict[str, Any]]:
        """Every combination of ``component``'s tabled params, as param -> parsed value."""
        specs = task.system.component(component).params
        names = [p for p in specs if f"{component}.{p}" in self.params]
        lists = [[specs[p].from_json(v) for v in self.params[f"{component}.{p}"]] for p in names]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*lists)]

    def configs(self, task: Task) -> Iterator[SystemConfig]:
        """Every global configuration of the space (first: the starting one)."""
        per = [[(c, v) for v in self.component_values(task, c)] for c in task.system.order]
        for combo in itertools.product(*per):
            yield SystemConfig(task.system, {c: v for c, v in combo if v})

    @property
    def models(self) -> tuple[str, ...]:
        """The models the space's LLM components may run (option ``models``, else ``model``)."""
        return tuple(self.options.get("models") or (self.model,))

    def n_configs(self) -> int:
        n = 1
        for values in self.params.values():
            n *= len(values)
        return n

    # -- files ---------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {**self.identity(), "digest": self.digest, "questions": list(self.questions),
                "notes": dict(self.notes)}

    def save(self, directory: str | Path) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / SPACE_FILE
        write_atomic(path, json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n")
        return path

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "space") -> CandidateSpace:
        try:
            if data.get("format") != FORMAT:
                raise ConfigError(f"{where}: format {data.get('format')!r}, expected {FORMAT}")
            samples = data.get("samples") or {}
            space = cls(system=data["system"], dataset=data["dataset"],
                        questions=tuple(str(q) for q in data["questions"]),
                        params={k: tuple(v) for k, v in data["params"].items()},
                        model=data.get("model", "qwen2.5-0.5b"),
                        options=dict(data.get("options") or {}),
                        samples=Samples(int(samples.get("n", 2)),
                                        float(samples.get("temperature", 1.0))),
                        notes=dict(data.get("notes") or {}))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{where}: malformed candidate space ({type(exc).__name__}: "
                              f"{exc})") from None
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if "digest" in data and data["digest"] != space.digest:
            raise ConfigError(f"{where}: recorded digest {data['digest']} does not match its "
                              f"contents ({space.digest}); the space was edited by hand")
        return space

    @classmethod
    def load(cls, directory: str | Path) -> CandidateSpace:
        path = Path(directory) / SPACE_FILE
        if not path.is_file():
            raise ConfigError(f"{directory}: not a replay table (no {SPACE_FILE})")
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: unreadable candidate space ({exc})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: a candidate space must be a JSON object")
        return cls.from_json(data, str(path))


def _tuples(options: Mapping[str, Any]) -> dict[str, Any]:
    """JSON lists back to the tuples system factories take."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}


def config_indices(data: dict, space: CandidateSpace) -> dict[str, int]:
    """A config (its JSON form) as the index of its value in each tabled param's candidates."""
    out = {}
    for key, values in space.params.items():
        comp, _, pname = key.partition(".")
        want = json.dumps(data[comp][pname], sort_keys=True)
        out[key] = next(i for i, v in enumerate(values) if json.dumps(v, sort_keys=True) == want)
    return out
