"""DSPy's MIPROv2 and GEPA as baselines: same system, split, local model, cache and cost unit.

A coalign ``System`` becomes a ``dspy.Module`` with one ``dspy.Predict`` per ``LLMComponent``
(other components still run as coalign components). Predictors render and parse exactly as their
components do, and DSPy's LM calls are served by the runtime's coalign LMs, so a program run sends
the same requests as ``System.run`` and shares its response cache. After optimization the
predictors' instructions and demos map back to the ``Text`` params, and coalign's runner
evaluates the result.

Budget rule: every LM call DSPy makes — program calls, MIPRO's instruction proposals, GEPA's
reflections; cache hits included, as coalign counts every executed component — costs
1 / (number of LLM components) equivalent full-system runs, so one program run is one run. Plans
size each optimizer to the budget; the program then refuses to start a run the budget no longer
covers, and the runs actually used (proposal calls included) are reported, overruns too.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

try:
    # _dspy_optimize takes its dspy names from here too: a missing extra fails in one place
    import dspy
    from dspy.adapters.chat_adapter import field_header_pattern  # noqa: F401
    from dspy.lm15 import Message as LM15Message
    from dspy.lm15 import Response, TextPart, response_to_events
    from dspy.lm15 import Usage as LM15Usage
    from dspy.teleprompt.gepa.instruction_proposal import InstructionProposer  # noqa: F401
    from dspy.utils.exceptions import AdapterParseError  # noqa: F401
except ImportError as exc:  # the benchmark extra is optional
    raise ImportError("DSPy baselines need the benchmark extra: pip install 'coalign[bench]'") \
        from exc

from coalign.component import LLMComponent, render_value
from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.errors import CoalignError, ConfigError
from coalign.lm import LMRequest, Message
from coalign.params import TextValue
from coalign.runtime import RunContext, Runtime
from coalign.system import System
from coalign.trace import Usage

METHODS = ("mipro", "gepa")
DEMO_CHARS = 400  # per demo field, as coalign's TextOptimizer cuts bootstrapped demos
REFLECT_CHARS = 300  # per field of GEPA's reflective examples (they must fit a 2k-token context)
PROPOSE_TAG = "dspy_propose"  # usage tag of calls made outside any predictor
EXAMPLE_ID = "coalign_example_id"  # label field of DSPy examples: finds the coalign Example
PROPOSER = "dspy-proposer"  # runtime name given to a proposer LM passed as an object

# (component, model) of the predictor call in progress; set by the program, read by the engine.
_CALL: ContextVar[tuple[str, str] | None] = ContextVar("coalign_dspy_call", default=None)


class BudgetExhausted(CoalignError, RuntimeError):
    """A DSPy program run was refused because the budget no longer covers it."""


class DSPyMeter:
    """DSPy's LM calls in a ``CostAccount`` over the K LLM components, and the budget guard.

    Phase ``dspy``: a predictor's calls, on its component. Phase ``dspy_propose``: calls made
    outside the program (proposals, reflections), spread as 1/K execution on each component.
    """

    def __init__(self, llm_components: Sequence[str], budget_runs: float = math.inf) -> None:
        self.account = CostAccount(list(llm_components))
        self.budget_runs = budget_runs
        self.calls = 0
        self._share = 1.0 / len(llm_components)
        self._in_flight = 0
        self._lock = threading.Lock()

    def record(self, component: str | None, usage: Usage) -> None:
        phase = "dspy" if component else PROPOSE_TAG
        with self._lock:
            self.calls += 1
            executed = self.account.executed.setdefault(phase, Counter())
            for c in [component] if component else self.account.components:
                executed[c] += 1 if component else self._share
            self.account.usage.setdefault(phase, {}).setdefault(component or PROPOSE_TAG,
                                                                Usage()).add(usage)

    @property
    def runs(self) -> float:
        with self._lock:
            return self.account.equivalent_runs()

    @contextlib.contextmanager
    def run_slot(self) -> Iterator[None]:
        """Reserve one program run; refuse it if spent + running + 1 would exceed the budget."""
        with self._lock:
            if self.account.equivalent_runs() + self._in_flight + 1 > self.budget_runs + 1e-9:
                raise BudgetExhausted(f"DSPy budget of {self.budget_runs:g} equivalent runs is "
                                      "spent; no further program run")
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1


class CoalignEngine:
    """A DSPy 3.4 engine (``complete(Request) -> Response``) served by a coalign runtime: a
    predictor's call goes to its component's model, any other call to ``default_model``."""

    def __init__(self, runtime: Runtime, default_model: str, meter: DSPyMeter | None = None,
                 sample_index: int = 0) -> None:
        runtime.lm(default_model)  # unknown names fail now, with the runtime's list
        self.runtime, self.default_model = runtime, default_model
        self.meter, self.sample_index = meter, sample_index

    def at_sample(self, index: int) -> CoalignEngine:
        return CoalignEngine(self.runtime, self.default_model, self.meter, index)

    def complete(self, request: Any) -> Response:
        component, model = _CALL.get() or (None, self.default_model)
        msgs = request_messages(request)
        cfg = request.config
        kwargs = {"max_tokens": cfg.max_tokens} if cfg.max_tokens else {}
        lm_request = LMRequest(tuple(msgs), temperature=cfg.temperature or 0.0,
                               stop=tuple(cfg.stop), sample_index=self.sample_index, **kwargs)
        ctx = RunContext(self.runtime, component or PROPOSE_TAG, "dspy", 0)
        out = ctx.generate(model, lm_request)
        if self.meter is not None:
            self.meter.record(component, ctx.usage)
        return engine_response(out)

    def stream(self, request: Any) -> Any:
        return response_to_events(self.complete(request))


def request_messages(request: Any) -> list[Message]:
    """A DSPy engine request as coalign messages (its system part first)."""
    msgs = [Message("system", _text(request.system))] if request.system is not None else []
    return msgs + [Message(m.role, m.text or "") for m in request.messages]


def engine_response(out: Any) -> Response:
    """A coalign ``LMResponse`` as the ``Response`` a DSPy engine returns."""
    usage = LM15Usage(input_tokens=out.prompt_tokens, output_tokens=out.completion_tokens)
    return Response(id=None, model=out.model, finish_reason="stop", usage=usage,
                    message=LM15Message.assistant([TextPart(out.text)]))


def _text(system: Any) -> str:
    return system if isinstance(system, str) else "".join(p.text for p in system)


class CoalignDSPyLM(dspy.LM):
    """``dspy.LM`` over a :class:`CoalignEngine`: DSPy 3.4's supported plug-in (``BaseLM.forward``
    subclasses are deprecated there). DSPy's cache and retries are off — coalign's own serve and
    count every call. DSPy asks for fresh samples with ``copy(rollout_id=r, temperature=1.0)`` but
    never hands ``rollout_id`` to an engine; here ``r`` becomes coalign's ``sample_index``."""

    def __init__(self, engine: CoalignEngine, **kwargs: Any) -> None:
        kwargs.setdefault("cache", False)
        kwargs.setdefault("num_retries", 0)
        super().__init__(f"coalign/{engine.default_model}", engine=engine, **kwargs)

    def copy(self, **kwargs: Any) -> CoalignDSPyLM:
        new = super().copy(**kwargs)
        if "rollout_id" in kwargs and isinstance(new._engine_spec, CoalignEngine):
            new._engine_spec = new._engine_spec.at_sample(int(kwargs["rollout_id"] or 0))
        return new


# -- system <-> program -----------------------------------------------------------------------


def _demo_fields(comp: LLMComponent, demo: Mapping[str, Any]) -> dict[str, str] | None:
    """A demo as the component's ``Text`` demo (None if it lacks an input or the output). DSPy's
    bootstrapped (``augmented``) demos hold raw values: rendered and cut as coalign's own are."""
    names = {*comp.inputs, *comp.optional_inputs, comp.output}
    keys = [k for k in demo.keys() if k in names]
    if comp.output not in keys or any(f not in keys for f in comp.inputs):
        return None
    raw = bool(demo.get("augmented"))
    return {k: v if isinstance(v, str) and not raw else render_value(v, DEMO_CHARS)
            for k, v in ((k, demo[k]) for k in keys)}


def text_value(comp: LLMComponent, instructions: str, demos: Sequence[Any]) -> TextValue:
    """A predictor's instructions and demos as the component's ``Text`` value (max_demos kept)."""
    rows = [d for d in (_demo_fields(comp, x) for x in demos) if d is not None]
    return TextValue(instructions, tuple(rows[: comp.params["prompt"].max_demos]))


class CoalignAdapter(dspy.Adapter):
    """Renders a predictor's call as its ``LLMComponent`` does and parses with its parser."""

    def __init__(self, component: LLMComponent) -> None:
        super().__init__()
        self.component = component

    def format(self, signature: Any, demos: list[Any], inputs: dict[str, Any]) -> list[dict]:
        value = text_value(self.component, signature.instructions, demos)
        return [{"role": m.role, "content": m.content}
                for m in self.component.messages(inputs, value)]

    def parse(self, signature: Any, completion: str) -> dict[str, Any]:
        return {self.component.output: self.component.parse(completion or "")}

    def _call_postprocess(self, processed_signature: Any, original_signature: Any,
                          outputs: list[Any], lm: Any, lm_kwargs: dict) -> list[dict[str, Any]]:
        # coalign parses an empty reply as its parser says; DSPy's default would raise instead
        return [self.parse(original_signature, o.get("text") if isinstance(o, dict) else o)
                for o in outputs]


class _Shared:
    """What every copy of a program shares: DSPy deep-copies modules, never the system or LMs."""

    def __init__(self, system: System, config: SystemConfig, runtime: Runtime,
                 meter: DSPyMeter | None) -> None:
        self.system, self.config, self.runtime, self.meter = system, config, runtime, meter
        self.adapters = {c.name: CoalignAdapter(c) for c in llm_components(system)}

    def __deepcopy__(self, memo: dict) -> _Shared:
        return self


class CoalignProgram(dspy.Module):
    """One ``dspy.Predict`` per LLM component, named after it; ``forward`` walks the system."""

    def __init__(self, shared: _Shared) -> None:
        super().__init__()
        self._coalign = shared
        for comp in shared.system.components:
            if isinstance(comp, LLMComponent):
                if hasattr(self, comp.name):
                    raise ConfigError(f"component name {comp.name!r} clashes with a dspy.Module "
                                      "attribute; rename the component")
                setattr(self, comp.name, _predictor(comp, shared.config[comp.name]["prompt"]))

    def forward(self, **inputs: Any) -> Any:
        s = self._coalign
        fields = {f: inputs[f] for f in s.system.inputs}
        with s.meter.run_slot() if s.meter is not None else contextlib.nullcontext():
            for name in s.system.order:
                comp = s.system.component(name)
                if not isinstance(comp, LLMComponent):
                    fields.update(s.system.run_component(name, fields, s.config, s.runtime,
                                                         example_id="dspy").outputs)
                    continue
                x = {f: fields.get(f) for f in (*comp.inputs, *comp.optional_inputs)}
                ctx = RunContext(s.runtime, name, "dspy", 0)
                done, x = comp.route(x, s.config[name], ctx)  # e.g. a reviser with no failure
                if done is not None:
                    fields.update(done)
                    continue
                model = (comp.param_value(s.config[name], "model", x, ctx)
                         if "model" in comp.params else comp.model)
                token = _CALL.set((name, model))
                try:
                    with dspy.context(adapter=s.adapters[name]):
                        fields[comp.output] = getattr(self, name)(**x)[comp.output]
                finally:
                    _CALL.reset(token)
        return dspy.Prediction(**{k: v for k, v in fields.items() if k not in s.system.inputs})


def _predictor(comp: LLMComponent, value: TextValue) -> Any:
    names = (*comp.inputs, *comp.optional_inputs)
    spec: dict[str, Any] = {f: (Any, dspy.InputField()) for f in names}
    spec[comp.output] = (str, dspy.OutputField())
    pred = dspy.Predict(dspy.Signature(spec, value.instruction), max_tokens=comp.max_tokens)
    pred.demos = [dspy.Example(**d) for d in value.demos]
    return pred


def llm_components(system: System) -> list[LLMComponent]:
    routed = [c.name for c in system.components if c.conditional] + [x.source for x in system.loops]
    if routed:
        raise ConfigError(f"components {routed} are conditional or loop back; the DSPy adapter "
                          "takes straight DAGs only")
    llm = [c for c in system.components if isinstance(c, LLMComponent)]
    custom = [c.name for c in llm if type(c).forward is not LLMComponent.forward]
    if custom:  # the program calls the predictor where the component would call the model
        raise ConfigError(f"LLM components {custom} override forward, which the DSPy adapter "
                          "cannot follow; override LLMComponent.route instead")
    if not llm:
        raise ConfigError(f"system {system.name!r} has no LLMComponent for DSPy to optimize")
    return llm


def to_dspy_program(system: System, config: SystemConfig | None = None,
                    runtime: Runtime | None = None, meter: DSPyMeter | None = None,
                    cls: type[CoalignProgram] | None = None) -> Any:
    """A ``dspy.Module`` computing what ``system.run`` computes under ``config``. ``cls``: a
    ``CoalignProgram`` subclass whose ``forward`` runs the system its own way (the replay
    MIPROv2 method runs coalign's ``System.run`` under the predictors' prompts)."""
    config = config if config is not None else system.default_config()
    return (cls or CoalignProgram)(_Shared(system, config, runtime or Runtime(), meter))


def from_dspy_program(program: Any, system: System,
                      config: SystemConfig | None = None) -> SystemConfig:
    """``config`` with each predictor's instructions and demos in its component's ``Text``."""
    config = config if config is not None else system.default_config()
    for name, pred in program.named_predictors():
        value = text_value(system.component(name), pred.signature.instructions, pred.demos)
        config = config.with_value(name, "prompt", value)
    return config
