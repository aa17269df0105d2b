"""A DSPy program's named predictors as coalign components, and the write-back of their values.

Each ``dspy.Predict`` the program reaches by ``named_predictors()`` becomes a
:class:`PredictorComponent`: its signature's input fields are the component's inputs, its output
fields (``reasoning`` too, for a ``ChainOfThought``) its outputs, and its instruction and demos
one ``Text`` param, ``prompt``. Predictor paths such as ``hop.predict`` or ``steps[0]`` are no
component names; they are mapped to ``hop-predict`` and ``steps-0``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from coalign.component import Component
from coalign.dspy._lm import ACTIVE_STEP, AdapterParseError, dspy
from coalign.errors import ConfigError
from coalign.params import Text, TextValue
from coalign.runtime import RunContext

PROMPT = "prompt"
MAX_DEMOS = 4  # the Text param's limit, raised to the predictor's own count where it has more


def component_name(path: str) -> str:
    """``hop.predict`` -> ``hop-predict``, ``steps[0].predict`` -> ``steps-0-predict``."""
    return re.sub(r"[^A-Za-z0-9_]+", "-", path).strip("-") or "predictor"


def plain(value: Any) -> Any:
    """A JSON form of a field value (strings, numbers, lists, objects; anything else as text):
    what a trace stores and what equality of a call's inputs is checked on."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return str(value)


def demo_fields(demo: Any, names: tuple[str, ...]) -> dict[str, str]:
    """A DSPy demo (``dspy.Example`` or dict) as a ``Text`` demo: its signature fields as text."""
    data = demo.toDict() if hasattr(demo, "toDict") else dict(demo)
    return {k: v if isinstance(v, str) else str(plain(v)) for k, v in data.items() if k in names}


class PredictorComponent(Component):
    """One named predictor. ``forward`` runs it alone on recorded inputs (a local search step);
    inside a program run the tracer calls :meth:`predict` instead."""

    def __init__(self, name: str, path: str, predictor: Any, lm: Any) -> None:
        sig = predictor.signature
        inputs, outputs = tuple(sig.input_fields), tuple(sig.output_fields)
        if not outputs:
            raise ConfigError(f"predictor {path!r} declares no output field")
        demos = tuple(demo_fields(d, inputs + outputs) for d in predictor.demos)
        prompt = Text(TextValue(sig.instructions, demos), max_demos=max(MAX_DEMOS, len(demos)),
                      description="instruction and demos")
        super().__init__(name, inputs, outputs, params={PROMPT: prompt},
                         description=f"maps {', '.join(inputs) or 'nothing'} to "
                                     f"{', '.join(outputs)} (DSPy predictor {path})")
        self.path, self.predictor, self.lm = path, predictor, lm
        self.original = type(predictor).forward.__get__(predictor)  # bypasses the tracer

    @property
    def model(self) -> str:
        return self.lm.coalign_name

    def predict(self, kwargs: Mapping[str, Any], value: TextValue) -> dict[str, Any]:
        """Call the predictor under ``value`` (without touching its own signature and demos);
        its output fields, or all ``None`` when the reply did not parse."""
        sig = self.predictor.signature.with_instructions(value.instruction)
        demos = [dspy.Example(**d) for d in value.demos]
        try:
            pred = self.original(**kwargs, signature=sig, demos=demos, lm=self.lm)
        except AdapterParseError:
            return dict.fromkeys(self.outputs)  # DSPy raises here; the tracer raises it on
        return {f: plain(pred.get(f)) for f in self.outputs}

    def forward(self, inputs: dict[str, Any], config: Mapping[str, Any],
                ctx: RunContext) -> dict[str, Any]:
        token = ACTIVE_STEP.set(ctx)
        try:
            return self.predict(inputs, config[PROMPT])
        finally:
            ACTIVE_STEP.reset(token)


def failed(outputs: Mapping[str, Any]) -> bool:
    """A step whose reply did not parse (every output ``None``)."""
    return all(v is None for v in outputs.values())


def write_back(components: list[PredictorComponent], values: Mapping[str, TextValue]) -> None:
    """Set each predictor's instruction and demos to ``values`` (component name -> value): the
    program then saves, loads and evaluates as any DSPy program."""
    for comp in components:
        value = values[comp.name]
        pred = comp.predictor
        pred.signature = pred.signature.with_instructions(value.instruction)
        pred.demos = [dspy.Example(**d) for d in value.demos]
