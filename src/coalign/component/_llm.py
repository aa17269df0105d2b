"""``LLMComponent``: a prompt template around an LM call, with a tunable instruction and model."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from coalign.component._base import Component
from coalign.errors import GraphError
from coalign.lm import LMRequest, Message
from coalign.params import Choice, Text, TextValue
from coalign.runtime import RunContext


def render_value(value: Any, limit: int = 1200) -> str:
    """Compact text of a field value: passages as ``[title] text`` lines, long text cut."""
    if type(value) is str:  # the common case, checked first: this runs on every LM call
        return value if len(value) <= limit else value[: limit - 1] + "…"
    if isinstance(value, (list, tuple)):
        lines = []
        for i, item in enumerate(value, 1):
            if isinstance(item, Mapping) and "text" in item:
                title = item.get("title")
                lines.append(f"[{i}] {title}: {item['text']}" if title else f"[{i}] {item['text']}")
            else:
                lines.append(f"[{i}] {item}")
        text = "\n".join(lines)
    elif value is None:
        text = "(none)"
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def field_label(name: str) -> str:
    return name.replace("_", " ").capitalize()


def render_fields(fields: Mapping[str, Any], limit: int = 1200) -> str:
    return "\n".join(f"{field_label(name)}: {render_value(v, limit)}"
                     for name, v in fields.items())


def first_line(text: str, prefixes: Sequence[str] = ()) -> str:
    """The first non-empty line, with a leading ``answer:``-style label (lower case) removed."""
    for line in text.splitlines():
        line = line.strip().strip("*").strip()
        if not line:
            continue
        if prefixes and line.lower().startswith(tuple(prefixes)):
            low = line.lower()
            for p in prefixes:
                if low.startswith(p):  # prefixes are given in lower case
                    line = line[len(p):].strip()
                    low = line.lower()
        return line
    return ""


LAYOUTS = ("instruction_first", "inputs_first")


class LLMComponent(Component):
    """One LM call: instruction (+ demos) as the system turn, rendered inputs as the user turn.

    Params: ``prompt`` (``Text``) and, when ``model`` is a ``Choice``, ``model`` (e.g. a
    per-instance choice between a cheap and a strong model).

    ``layout="inputs_first"`` puts the instruction after the inputs, at the end of the last user
    turn (the chat template's default system turn first): calls that differ only in their
    instruction then share the whole input as a prompt prefix, which a prefix-reusing backend
    evaluates once (replay tables build this way).
    """

    def __init__(self, name: str, inputs: Sequence[str], output: str, instruction: str, *,
                 model: str | Choice = "qwen2.5-0.5b", max_tokens: int = 64,
                 parse: Callable[[str], Any] | None = None, field_limit: int = 1200,
                 description: str = "", layout: str = "instruction_first",
                 **kwargs: Any) -> None:
        if layout not in LAYOUTS:
            raise GraphError(f"component {name!r}: layout must be one of {list(LAYOUTS)}, "
                             f"got {layout!r}")
        params: dict[str, Any] = {"prompt": Text(instruction, description="instruction")}
        if isinstance(model, Choice):
            params["model"] = model
        elif not isinstance(model, str) or not model:
            raise GraphError(f"component {name!r}: model must be a model name or a Choice")
        super().__init__(name, inputs, (output,), params=params,
                         description=description or instruction, **kwargs)
        self.output = output
        self.model = model
        self.max_tokens = max_tokens
        self.field_limit = field_limit
        self.layout = layout
        self._prefixes = (f"{output.lower()}:", "answer:")
        self.parse = parse or self._first_line
        self._labels = {f: field_label(f) for f in (*self.inputs, *self.optional_inputs)}
        self._per_call_model = "model" in self.params

    def _first_line(self, text: str) -> str:
        return first_line(text, self._prefixes)

    def messages(self, inputs: Mapping[str, Any], prompt: TextValue) -> tuple[Message, ...]:
        first = self.layout == "instruction_first"
        msgs = [Message("system", prompt.instruction)] if first else []
        for demo in prompt.demos:
            msgs.append(Message("user", render_fields(self._demo_fields(demo), self.field_limit)))
            msgs.append(Message("assistant", str(demo.get(self.output, ""))))
        labels, limit = self._labels, self.field_limit
        text = "\n".join(f"{labels.get(k) or field_label(k)}: {render_value(v, limit)}"
                         for k, v in inputs.items())
        msgs.append(Message("user", text if first else f"{text}\n\n{prompt.instruction}"))
        return tuple(msgs)

    def _demo_fields(self, demo: Mapping[str, Any]) -> dict[str, Any]:
        """A demo's input fields in one canonical order: the declared inputs, then any other
        keys sorted. The dict's own order is not part of the config (the digest, the store and
        the export sort keys), so a resumed or exported config must build the same prompt."""
        order = (*self.inputs, *self.optional_inputs)
        declared = [k for k in order if k in demo and k != self.output]
        extra = sorted(k for k in demo if k not in order and k != self.output)
        return {k: demo[k] for k in (*declared, *extra)}

    def route(self, inputs: dict[str, Any], config: Mapping[str, Any],
              ctx: RunContext) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """Before the model call: (the outputs to return without one, or None; the inputs the
        model is shown). A subclass that answers some inputs itself or hides a field overrides
        this rather than ``forward``, so every caller of the model (the DSPy adapter too)
        follows it."""
        return None, inputs

    def forward(self, inputs: dict[str, Any], config: Mapping[str, Any],
                ctx: RunContext) -> dict[str, Any]:
        done, inputs = self.route(inputs, config, ctx)
        if done is not None:
            return done
        model = (self.param_value(config, "model", inputs, ctx) if self._per_call_model
                 else self.model)
        request = LMRequest(self.messages(inputs, config["prompt"]), max_tokens=self.max_tokens)
        response = ctx.generate(model, request)
        return {self.output: self.parse(response.text)}
