"""Records of one system run: what each component saw, produced, used and cost."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from coalign.pairs import canonical_json


@dataclass(slots=True)
class Usage:
    """LLM usage of one step (or a sum of steps).

    ``model_s``: what these calls cost in model seconds (``coalign.lm.model_seconds``: their
    tokens at the model's measured speed), cache hits and replayed calls included: what
    serving the configuration costs, whatever this run happened to have cached. Which model
    ran is in it.
    """

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_s: float = 0.0

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.model_s += other.model_s

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, int | float]:
        return {"calls": self.calls, "cache_hits": self.cache_hits,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "model_s": round(self.model_s, 4)}

    @classmethod
    def from_json(cls, data: Mapping[str, int | float]) -> Usage:
        counts = {k: int(data.get(k, 0)) for k in ("calls", "cache_hits", "prompt_tokens",
                                                    "completion_tokens")}
        return cls(**counts, model_s=float(data.get("model_s", 0.0)))


@dataclass(slots=True)
class Step:
    """One execution of one component (``visit`` > 0 when a loop re-runs it)."""

    component: str
    visit: int
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    skipped: bool = False  # inactive for this input (dynamic routing)
    reused: bool = False  # copied from a cached trace by ``run_from``
    latency_s: float = 0.0
    usage: Usage = field(default_factory=Usage)
    choices: dict[str, Any] = field(default_factory=dict)  # per-instance params as resolved

    @property
    def key(self) -> tuple[str, int]:
        return (self.component, self.visit)

    def to_json(self) -> dict[str, Any]:
        return {"component": self.component, "visit": self.visit, "inputs": self.inputs,
                "outputs": self.outputs, "skipped": self.skipped, "reused": self.reused,
                "latency_s": self.latency_s, "usage": self.usage.to_json(),
                "choices": self.choices}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        return cls(component=data["component"], visit=int(data["visit"]),
                   inputs=dict(data["inputs"]), outputs=dict(data["outputs"]),
                   skipped=bool(data.get("skipped", False)), reused=bool(data.get("reused", False)),
                   latency_s=float(data.get("latency_s", 0.0)),
                   usage=Usage.from_json(data.get("usage", {})),
                   choices=dict(data.get("choices", {})))


@dataclass
class Trace:
    """A full run of a system on one example under one configuration."""

    example_id: str
    config_digest: str
    inputs: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)  # every field's final value
    reward: float | None = None

    def step(self, component: str, visit: int = 0) -> Step:
        for s in self.steps:
            if s.component == component and s.visit == visit:
                return s
        raise KeyError(f"trace of example {self.example_id!r} has no step {component!r}#{visit}")

    def usage(self, component: str | None = None, *, include_reused: bool = False) -> Usage:
        total = Usage()
        for s in self.steps:
            if (component is None or s.component == component) and (include_reused or not s.reused):
                total.add(s.usage)
        return total

    def cost_s(self) -> float:
        """Model seconds of the whole run, reused prefix steps included: the per-query cost of
        its configuration (``Usage.model_s``)."""
        return self.usage(include_reused=True).model_s

    def outputs_equal(self, other: Trace) -> bool:
        """Same executed steps with the same outputs and the same final state."""
        mine = [(s.key, s.skipped, canonical_json(s.outputs)) for s in self.steps]
        theirs = [(s.key, s.skipped, canonical_json(s.outputs)) for s in other.steps]
        return mine == theirs and canonical_json(self.state) == canonical_json(other.state)

    def to_json(self) -> dict[str, Any]:
        return {"example_id": self.example_id, "config_digest": self.config_digest,
                "inputs": self.inputs, "steps": [s.to_json() for s in self.steps],
                "state": self.state, "reward": self.reward}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trace:
        return cls(example_id=data["example_id"], config_digest=data["config_digest"],
                   inputs=dict(data["inputs"]), steps=[Step.from_json(s) for s in data["steps"]],
                   state=dict(data["state"]), reward=data.get("reward"))

    def digest(self) -> str:
        return hashlib.sha256(canonical_json(self.to_json()).encode("utf-8")).hexdigest()
