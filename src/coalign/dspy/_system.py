"""``ProgramSystem``: a DSPy program run as a coalign ``System``; its data flow is traced.

A run calls the program's own ``forward``. A tracer put on each named predictor records every
call as a ``Step``: the component, its visit (how often that predictor already ran in this run),
its inputs (the call's signature fields) and its outputs. Which predictors run, how often and on
what is whatever ``forward`` did on this input: the data flow is the trace's, not a declared
graph. A predictor ``forward`` did not call on an input gets a skipped step (as a coalign
component whose ``when`` is false), so per-component views know it had no input there.

Partial runs re-run ``forward`` as well, answering calls from a recorded trace:

- ``run_from(k, trace, config)``: k runs under ``config``; any other call whose inputs equal the
  recorded call's (same predictor, same visit) is taken from the trace, and the rest run (a
  repeated request is then answered by the LM response cache);
- ``run_after(k, trace, config)``: k's recorded calls are taken from the trace too. Rollouts put
  a candidate output there, so ``forward`` continues from that forced output;
- ``run_component(k, x, config)``: k alone on recorded inputs (local search, candidate draws).

This assumes ``forward`` is deterministic given its inputs and its predictors' outputs (Python
code between predictors, such as retrieval, re-runs and must give the same result).
``descendants(k)`` are the predictors seen called after k in any traced run so far (before the
first run: every other predictor); rollouts sample those when asked to average downstream noise.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from coalign.config import SystemConfig
from coalign.dspy._components import (
    PROMPT,
    PredictorComponent,
    component_name,
    failed,
    plain,
)
from coalign.dspy._lm import ACTIVE_STEP, CoalignLM, dspy
from coalign.dspy._stock import LMWrappers
from coalign.errors import CoalignError, ConfigError, GraphError
from coalign.pairs import canonical_json
from coalign.runtime import RunContext, Runtime, Sampling
from coalign.system import System
from coalign.trace import Step, Trace

OUTPUT = "prediction"  # the trace state field holding forward's result (None if it raised)
ERROR = "error"  # the state field saying why forward raised
_OWN_KWARGS = ("lm", "signature", "demos")  # set by the tracer on every traced call


class PredictorFailed(Exception):
    """A predictor's reply did not parse: ``forward`` stops, as it does under DSPy."""


@dataclass
class _Recorder:
    """One run's trace in the making; the tracer of every predictor appends to it."""

    example_id: str
    config: SystemConfig
    runtime: Runtime
    sampling: Mapping[str, Sampling]
    reuse: Mapping[tuple[str, int], Step]
    dirty: frozenset[str]
    keep: frozenset[str] = frozenset()
    steps: list[Step] = field(default_factory=list)
    visits: Counter = field(default_factory=Counter)

    def call(self, comp: PredictorComponent, kwargs: dict[str, Any]) -> Any:
        visit = self.visits[comp.name]
        self.visits[comp.name] += 1
        x = {f: plain(kwargs[f]) for f in comp.inputs if f in kwargs}
        old = self.reuse.get((comp.name, visit))
        same = (old is not None and not old.skipped
                and canonical_json(old.inputs) == canonical_json(x))
        # a kept predictor's call is forced (a rollout's candidate sits in the trace); a dirty or
        # sampled one runs; any other is reused where its inputs did not change
        if same and (comp.name in self.keep or (comp.name not in self.dirty
                                                and comp.name not in self.sampling)):
            step = Step(comp.name, visit, dict(old.inputs), dict(old.outputs), reused=True,
                        usage=old.usage)
        else:
            ctx = RunContext(self.runtime, comp.name, self.example_id, visit,
                             self.sampling.get(comp.name))
            token = ACTIVE_STEP.set(ctx)
            t0 = perf_counter()
            try:
                y = comp.predict({k: v for k, v in kwargs.items() if k not in _OWN_KWARGS},
                                 self.config[comp.name][PROMPT])
            finally:
                ACTIVE_STEP.reset(token)
            step = Step(comp.name, visit, x, y, False, False, perf_counter() - t0, ctx.usage)
        self.steps.append(step)
        if failed(step.outputs):
            raise PredictorFailed(f"predictor {comp.path!r}: the reply did not parse")
        return dspy.Prediction(**step.outputs)


_RECORDER: ContextVar[_Recorder | None] = ContextVar("coalign_dspy_recorder", default=None)


class _Tracer:
    """Put on a predictor as its ``forward``: records the call in the run in progress (outside
    a coalign run the predictor behaves as it always does)."""

    def __init__(self, comp: PredictorComponent) -> None:
        self.comp = comp

    def __call__(self, **kwargs: Any) -> Any:
        recorder = _RECORDER.get()
        if recorder is None:
            return self.comp.original(**kwargs)
        return recorder.call(self.comp, kwargs)


class ProgramSystem(System):
    """A ``dspy.Module`` as a ``System`` of its named predictors (see the module docstring).

    Use it as a context manager, or call :meth:`detach`: the tracers live on the program's own
    predictors until then. ``inputs`` are the program's input fields (``forward``'s keyword
    arguments); the system's output is ``forward``'s result. ``lm`` serves the predictors
    without an LM of their own; it and theirs may be any ``dspy.BaseLM`` (see ``_stock``).
    """

    def __init__(self, program: Any, inputs: Sequence[str], lm: Any,
                 name: str | None = None, wrappers: LMWrappers | None = None) -> None:
        if not isinstance(program, dspy.Module):
            raise ConfigError(f"expected a dspy.Module, got {type(program).__name__}")
        named = program.named_predictors()
        if not named:
            raise ConfigError(f"program {type(program).__name__} has no named predictor "
                              "(dspy.Predict or a module holding one) to optimize")
        if not inputs:
            raise ConfigError("the program's examples name no input field; build them with "
                              "dspy.Example(...).with_inputs('question', ...)")
        # not System.__init__: the graph is not declared but traced (fields may repeat, e.g. two
        # ChainOfThought steps both write 'reasoning')
        self.name = name or type(program).__name__
        self.program = program
        self.inputs, self.output, self.loops = tuple(inputs), OUTPUT, []
        self.components: list[PredictorComponent] = []
        wrap = wrappers or LMWrappers()
        for path, pred in named:
            own = wrap(pred.lm, f"predictor {path!r} lm") if pred.lm is not None \
                else wrap(lm, "lm")
            self.components.append(PredictorComponent(component_name(path), path, pred, own))
        self._by_name = {c.name: c for c in self.components}
        if len(self._by_name) < len(self.components):
            raise GraphError(f"predictor paths {[c.path for c in self.components]} map to "
                             "clashing component names; rename the attributes")
        self.order = [c.name for c in self.components]
        self._after: dict[str, set[str]] | None = None  # seen called after, per predictor
        self._lock = threading.Lock()
        for comp in self.components:
            comp.predictor.forward = _Tracer(comp)

    def detach(self) -> None:
        """Take the tracers off the program's predictors."""
        for comp in self.components:
            if isinstance(comp.predictor.__dict__.get("forward"), _Tracer):
                del comp.predictor.forward

    def __enter__(self) -> ProgramSystem:
        return self

    def __exit__(self, *exc: object) -> None:
        self.detach()

    @property
    def models(self) -> dict[str, CoalignLM]:
        return {c.model: c.lm for c in self.components}

    def descendants(self, name: str) -> set[str]:
        self.component(name)
        with self._lock:
            if self._after is None:
                return {c.name for c in self.components} - {name}
            return set(self._after.get(name, ()))

    # -- execution ------------------------------------------------------------------------------

    def run(self, example_id: str, inputs: Mapping[str, Any], config: SystemConfig,
            runtime: Runtime, *, sampling: Mapping[str, Sampling] | None = None) -> Trace:
        return self._trace(example_id, inputs, config, runtime, {}, frozenset(), frozenset(),
                           sampling or {})

    def run_from(self, component: str, trace: Trace, config: SystemConfig, runtime: Runtime, *,
                 sampling: Mapping[str, Sampling] | None = None) -> Trace:
        if not self._ran(component, trace):  # not on this input's path: nothing can change
            return self._copy(trace, config)
        return self._trace(trace.example_id, trace.inputs, config, runtime,
                           {s.key: s for s in trace.steps}, frozenset({component}), frozenset(),
                           sampling or {})

    def run_after(self, component: str, trace: Trace, config: SystemConfig, runtime: Runtime, *,
                  sampling: Mapping[str, Sampling] | None = None) -> Trace:
        if not self._ran(component, trace):
            return self._copy(trace, config)
        return self._trace(trace.example_id, trace.inputs, config, runtime,
                           {s.key: s for s in trace.steps}, frozenset(), frozenset({component}),
                           sampling or {})

    def run_component(self, component: str, inputs: Mapping[str, Any], config: SystemConfig,
                      runtime: Runtime, *, example_id: str = "",
                      sampling: Sampling | None = None) -> Step:
        comp = self.component(component)
        ctx = RunContext(runtime, comp.name, example_id, 0, sampling)
        t0 = perf_counter()
        y = comp(dict(inputs), config[comp.name], ctx)
        return Step(comp.name, 0, dict(inputs), y, False, False, perf_counter() - t0, ctx.usage)

    @staticmethod
    def _ran(component: str, trace: Trace) -> bool:
        return any(s.component == component and not s.skipped for s in trace.steps)

    @staticmethod
    def _copy(trace: Trace, config: SystemConfig) -> Trace:
        steps = [Step(s.component, s.visit, dict(s.inputs), dict(s.outputs), skipped=s.skipped,
                      reused=True, usage=s.usage) for s in trace.steps]
        return Trace(trace.example_id, config.digest, dict(trace.inputs), steps,
                     dict(trace.state))

    def _trace(self, example_id: str, inputs: Mapping[str, Any], config: SystemConfig,
               runtime: Runtime, reuse: Mapping[tuple[str, int], Step], dirty: frozenset[str],
               keep: frozenset[str], sampling: Mapping[str, Sampling]) -> Trace:
        missing = [f for f in self.inputs if f not in inputs]
        if missing:
            raise GraphError(f"example {example_id!r} lacks program input field(s) {missing}")
        args = {f: inputs[f] for f in self.inputs}
        recorder = _Recorder(example_id, config, runtime, sampling, reuse, dirty, keep)
        token = _RECORDER.set(recorder)
        result, error = None, None
        try:
            result = self.program(**args)
        except CoalignError:  # the LM backend, the budget, a bad config: not the program's
            raise
        except Exception as exc:  # DSPy's Evaluate scores a program that raised as a failure
            error = f"{type(exc).__name__}: {exc}"
        finally:
            _RECORDER.reset(token)
        steps = recorder.steps
        called = {s.component for s in steps}
        steps += [Step(c.name, 0, {}, dict.fromkeys(c.outputs), skipped=True)
                  for c in self.components if c.name not in called]
        self._observe(steps)
        out = plain(result.toDict() if hasattr(result, "toDict") else result)
        state = {**{f: plain(v) for f, v in args.items()}, OUTPUT: out, ERROR: error}
        return Trace(example_id, config.digest, {f: plain(v) for f, v in args.items()}, steps,
                     state)

    def _observe(self, steps: list[Step]) -> None:
        """Record which predictors ran after which in this run (the traced data flow)."""
        order = [s.component for s in steps if not s.skipped]
        with self._lock:
            after = self._after if self._after is not None else {}
            for i, name in enumerate(order):
                if order.index(name) == i:  # from its first call on
                    after.setdefault(name, set()).update(n for n in order[i + 1:] if n != name)
            self._after = after
