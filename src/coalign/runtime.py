"""What a run needs besides the system and its configuration: LMs, selectors, concurrency, seed.

``RunContext`` is the per-step view a component's ``forward`` receives: it resolves model names to
LMs, records the step's usage, and resolves per-instance parameters through a ``Selector``.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from coalign.errors import ConfigError
from coalign.executors import BaseExecutor, ThreadExecutor
from coalign.lm import LM, LMError, LMRequest, LMResponse, model_seconds, redact_url
from coalign.trace import Usage

_T = TypeVar("_T")
_R = TypeVar("_R")


class Selector(Protocol):
    """Chooses a per-instance parameter's option for one input (e.g. by local reward)."""

    def select(self, component: str, param: str, inputs: Mapping[str, Any],
               options: tuple[Any, ...], default: Any) -> Any: ...


class UsageSink(Protocol):
    """Receives every LM response with the component it is attributed to (e.g. a usage meter)."""

    def record(self, tag: str, response: LMResponse) -> None: ...


class OutcomeLog(Protocol):
    """Recorded results of steps that are not a pure function of their inputs (a sandboxed test
    run near its time limit): a replay table keeps them so that a replay sees what its build saw
    and asks the table's LLM requests, not ones that depend on the replaying machine's timing."""

    def get(self, key: str) -> Any | None: ...

    def put(self, key: str, value: Any, component: str, question: str) -> None: ...


@dataclass
class Runtime:
    """Shared, thread-safe services for running systems.

    ``lms`` maps the model names used in configurations (``"qwen2.5-0.5b"``) to backends;
    ``sample_temperature``/``sample_index`` are set by Monte-Carlo rollouts so that a component's
    LLM calls sample instead of decoding greedily. ``executor`` fans items out (``map``); without
    one, ``max_workers`` threads do. ``outcomes``: a log that pins timing-dependent step
    results (``RunContext.pinned``); without one they are computed every time.
    """

    lms: Mapping[str, LM] = field(default_factory=dict)
    selectors: Mapping[tuple[str, str], Selector] = field(default_factory=dict)
    sink: UsageSink | None = None
    max_workers: int = 4
    seed: int = 0
    executor: BaseExecutor | None = None
    outcomes: OutcomeLog | None = None

    def map(self, fn: Callable[[_T], _R], items: Iterable[_T]) -> Iterator[_R]:
        """``fn`` over ``items`` concurrently, results in item order."""
        return (self.executor or ThreadExecutor(self.max_workers)).map(fn, items)

    def lm(self, name: str) -> LM:
        try:
            return self.lms[name]
        except KeyError:
            known = ", ".join(sorted(self.lms)) or "none"
            # model names may be endpoint specs with a key in the URL: never print it
            raise ConfigError(redact_url(f"unknown model {name!r}; runtime has: {known}")) \
                from None


@dataclass
class Sampling:
    """Overrides for stochastic re-execution of one component (rollouts)."""

    temperature: float
    sample_index: int


class RunContext:
    """Per-step handle given to ``Component.forward``."""

    __slots__ = ("runtime", "component", "example_id", "visit", "sampling", "usage", "choices",
                 "_rng")

    def __init__(self, runtime: Runtime, component: str, example_id: str, visit: int,
                 sampling: Sampling | None = None) -> None:
        self.runtime = runtime
        self.component = component
        self.example_id = example_id
        self.visit = visit
        self.sampling = sampling
        self.usage = Usage()
        self.choices: dict[str, Any] = {}
        self._rng: random.Random | None = None

    @property
    def rng(self) -> random.Random:
        """A generator seeded by (run seed, example, component, visit, sample); built on demand
        because seeding from a string costs more than the rest of a step's bookkeeping."""
        if self._rng is None:
            s = self.sampling.sample_index if self.sampling else -1
            self._rng = random.Random(f"{self.runtime.seed}:{self.example_id}:{self.component}:"
                                      f"{self.visit}:{s}")
        return self._rng

    def generate(self, model: str, request: LMRequest) -> LMResponse:
        """Call ``model``, applying rollout sampling overrides and recording usage."""
        if self.sampling is not None:
            request = LMRequest(messages=request.messages, model=request.model,
                                temperature=self.sampling.temperature,
                                max_tokens=request.max_tokens, stop=request.stop,
                                sample_index=self.sampling.sample_index)
        try:
            response = self.runtime.lm(model).generate(request)
        except LMError as exc:
            if not getattr(exc, "locate", False):
                raise
            # e.g. a replay miss: say which component and question asked
            raise type(exc)(f"{self.component} on {self.example_id!r}: {exc}") from None
        self.usage.model_s += model_seconds(model, response.prompt_tokens,
                                            response.completion_tokens, response.latency_s)
        if response.cached:
            self.usage.cache_hits += 1
        else:
            self.usage.calls += 1
            self.usage.prompt_tokens += response.prompt_tokens
            self.usage.completion_tokens += response.completion_tokens
        if self.runtime.sink is not None:
            self.runtime.sink.record(self.component, response)
        return response

    def pinned(self, what: Sequence[Any], compute: Callable[[], _T]) -> _T:
        """``compute()``, or the value the runtime's outcome log recorded for ``what`` (a JSON
        list that determines the step: its kind and inputs); a computed value is logged. The
        value must be JSON data and not None."""
        log = self.runtime.outcomes
        if log is None:
            return compute()
        key = hashlib.sha256(json.dumps(list(what), sort_keys=True, ensure_ascii=False)
                             .encode("utf-8")).hexdigest()[:32]
        found = log.get(key)
        if found is not None:
            return found
        value = compute()
        log.put(key, value, self.component, self.example_id)
        return value

    def resolve(self, param: str, options: tuple[Any, ...], value: Any,
                inputs: Mapping[str, Any], per_instance: bool) -> Any:
        """The value a parameter takes for this input: the configured one, or a selector's pick."""
        if per_instance:
            selector = self.runtime.selectors.get((self.component, param))
            if selector is not None:
                value = selector.select(self.component, param, inputs, options, value)
                if value not in options:
                    raise ConfigError(f"selector for {self.component}.{param} returned {value!r}, "
                                      f"not one of {list(options)}")
            self.choices[param] = value
        return value


def selector_tag(digests: Mapping[tuple[str, str], str]) -> str:
    """What tells stored traces of one config apart by the selectors in place (``digests``:
    each per-instance param's selector digest)."""
    return "".join(sorted(f"|{c}.{p}@{d[:12]}" for (c, p), d in digests.items()))
