"""Configuration kinds: the knobs a component exposes.

Three kinds cover the heterogeneous spaces of a compound system:

* ``Text``: an instruction plus optional demonstrations (values are ``TextValue``);
* ``Choice``: one of a finite set of JSON-able options (model id, retriever k, a numeric grid);
* ``Weights``: the parameters of a torch module (values are state dicts).

Every kind knows its default, validates and (de)serializes values to JSON, and has a scope:
``global`` (one value for every input) or ``per_instance`` (chosen per input at inference by a
selector, e.g. the component's local reward).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from coalign.errors import ConfigError

Scope = Literal["global", "per_instance"]


@dataclass(frozen=True)
class TextValue:
    """An instruction and few-shot demonstrations (each a dict of field -> text)."""

    instruction: str
    demos: tuple[dict[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"instruction": self.instruction, "demos": [dict(d) for d in self.demos]}

    @classmethod
    def from_json(cls, data: Any) -> TextValue:
        if isinstance(data, str):
            return cls(data)
        if not isinstance(data, dict) or not isinstance(data.get("instruction"), str):
            raise ConfigError("Text value must be a string or {'instruction': str}, "
                              f"got {data!r}")
        demos = data.get("demos", [])
        if not isinstance(demos, list) or not all(isinstance(d, dict) for d in demos):
            raise ConfigError("Text value field 'demos' must be a list of objects")
        return cls(data["instruction"],
                   tuple({str(k): str(v) for k, v in d.items()} for d in demos))


class Param:
    """Base of all configuration kinds. Subclasses define the value type and its JSON form."""

    kind: str = "param"

    def __init__(self, default: Any, *, scope: Scope = "global", description: str = "") -> None:
        if scope not in ("global", "per_instance"):
            raise ConfigError(f"param scope must be 'global' or 'per_instance', got {scope!r}")
        self.scope: Scope = scope
        self.description = description
        self.default = self.validate(default)

    def validate(self, value: Any) -> Any:
        return value

    def to_json(self, value: Any) -> Any:
        return value

    def from_json(self, data: Any) -> Any:
        return self.validate(data)

    def space(self) -> dict[str, Any]:
        """JSON description of the search space (for reports and config snapshots)."""
        return {"kind": self.kind, "scope": self.scope}


class Text(Param):
    """An instruction with demos. ``candidates`` makes the space finite (e.g. a replay table's):
    the value must then be one of them, and optimizers choose among them instead of writing
    new instructions."""

    kind = "text"

    def __init__(self, instruction: str | TextValue, demos: Sequence[dict[str, str]] = (),
                 *, max_demos: int = 4, scope: Scope = "global", description: str = "",
                 candidates: Sequence[TextValue | str] = ()) -> None:
        self.max_demos = max_demos
        self.candidates: tuple[TextValue, ...] = ()
        self.candidates = tuple(self.validate(c) for c in candidates)
        value = instruction if isinstance(instruction, TextValue) else TextValue(
            instruction, tuple(dict(d) for d in demos))
        super().__init__(value, scope=scope, description=description)

    def validate(self, value: Any) -> TextValue:
        if isinstance(value, str):
            value = TextValue(value)
        if not isinstance(value, TextValue):
            raise ConfigError(f"Text param expects a TextValue or str, got {type(value).__name__}")
        if len(value.demos) > self.max_demos:
            raise ConfigError(f"Text param allows at most {self.max_demos} demos, "
                              f"got {len(value.demos)}")
        if self.candidates and value not in self.candidates:
            shown = " ".join(value.instruction.split())[:60]
            raise ConfigError(f"Text value {shown!r} (with {len(value.demos)} demos) is not one "
                              f"of the param's {len(self.candidates)} candidates")
        return value

    def to_json(self, value: TextValue) -> Any:
        return value.to_json()

    def from_json(self, data: Any) -> TextValue:
        return self.validate(TextValue.from_json(data))

    def space(self) -> dict[str, Any]:
        out = {**super().space(), "max_demos": self.max_demos}
        if self.candidates:
            out["candidates"] = len(self.candidates)
        return out


class Choice(Param):
    kind = "choice"

    def __init__(self, options: Sequence[Any], default: Any = None, *,
                 scope: Scope = "global", description: str = "") -> None:
        if not options:
            raise ConfigError("Choice param needs at least one option")
        self.options = tuple(options)
        if len(set(map(repr, self.options))) != len(self.options):
            raise ConfigError(f"Choice options must be distinct, got {list(self.options)}")
        super().__init__(self.options[0] if default is None else default,
                         scope=scope, description=description)

    def validate(self, value: Any) -> Any:
        if value not in self.options:
            raise ConfigError(f"choice {value!r} is not one of {list(self.options)}")
        return value

    def space(self) -> dict[str, Any]:
        return {**super().space(), "options": list(self.options)}


class WeightsValue(dict):
    """A state dict that names itself by content digest: ledgers and caches key values through
    ``to_json``, and base64 safetensors would bloat every ledger row."""

    def to_json(self) -> dict[str, Any]:
        return {"weights_sha256": state_digest(self),
                "n_parameters": sum(int(t.numel()) for t in self.values())}


def state_digest(state: Mapping[str, Any]) -> str:
    h = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


class Weights(Param):
    """Parameters of a torch module built by ``factory``; values are state dicts.

    ``lr``: the learning rate a policy-gradient optimizer takes for this module, where its
    numbers' scale calls for another than the optimizer's own (None: the optimizer's).

    JSON form: base64 of the safetensors bytes (no pickle anywhere).
    """

    kind = "weights"

    def __init__(self, factory: Callable[[], Any], *, scope: Scope = "global",
                 description: str = "", lr: float | None = None) -> None:
        if lr is not None and not lr > 0:
            raise ConfigError(f"Weights lr must be > 0, got {lr}")
        self.factory, self.lr = factory, lr
        module = factory()
        super().__init__({k: v.detach().clone() for k, v in module.state_dict().items()},
                         scope=scope, description=description)

    def validate(self, value: Any) -> WeightsValue:
        if not isinstance(value, dict):
            raise ConfigError(f"Weights value must be a state dict, got {type(value).__name__}")
        return value if isinstance(value, WeightsValue) else WeightsValue(value)

    def build(self, value: dict[str, Any]) -> Any:
        """A fresh module loaded with ``value`` (in eval mode)."""
        module = self.factory()
        module.load_state_dict(value)
        module.eval()
        return module

    def to_json(self, value: dict[str, Any]) -> Any:
        from safetensors.torch import save

        tensors = {k: v.contiguous() for k, v in value.items()}
        return {"safetensors_b64": base64.b64encode(save(tensors)).decode("ascii")}

    def from_json(self, data: Any) -> dict[str, Any]:
        from safetensors.torch import load

        if not isinstance(data, dict) or "safetensors_b64" not in data:
            raise ConfigError("Weights value must be {'safetensors_b64': ...}")
        try:
            return self.validate(load(base64.b64decode(data["safetensors_b64"])))
        except Exception as exc:  # corrupt base64 or safetensors payload
            raise ConfigError(f"Weights value is not a valid safetensors payload: {exc}") from None

    def space(self) -> dict[str, Any]:
        value = self.default
        n = sum(int(t.numel()) for t in value.values())
        return {**super().space(), "n_parameters": n}
