"""``Component``: a node of a compound system with declared fields and parameters."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from coalign.errors import ConfigError, GraphError
from coalign.params import Param
from coalign.runtime import RunContext


class Component(abc.ABC):
    """Maps declared input fields to declared output fields under a configuration.

    ``optional_inputs`` may be missing (they arrive as ``None``), e.g. feedback that a loop
    carries back from a downstream verifier. ``when`` makes the component's incoming edges
    conditional: when it returns False for the current fields, the component is skipped and its
    outputs are ``None``. ``checks``: gold-free scores of an (inputs, outputs) item (see
    ``coalign.rewards.Check``) that the local reward adds, weighed by the preference pairs.
    """

    def __init__(self, name: str, inputs: Sequence[str], outputs: Sequence[str], *,
                 params: Mapping[str, Param] | None = None, description: str = "",
                 optional_inputs: Sequence[str] = (),
                 when: Callable[[Mapping[str, Any]], bool] | None = None,
                 checks: Sequence[Callable[..., float | None]] = ()) -> None:
        if not name or not name.replace("_", "").replace("-", "").isalnum():
            raise GraphError(f"component name {name!r} must be non-empty letters, digits, _ or -")
        if not outputs:
            raise GraphError(f"component {name!r} declares no output fields")
        self.name = name
        self.inputs = tuple(inputs)
        self.optional_inputs = tuple(optional_inputs)
        self.outputs = tuple(outputs)
        self._output_keys = frozenset(self.outputs)
        self.params: dict[str, Param] = dict(params or {})
        self.description = description or name
        self._when = when
        self.checks = tuple(checks)
        self.conditional = when is not None  # lets the runner skip the call on the hot path

    def active(self, fields: Mapping[str, Any]) -> bool:
        return True if self._when is None else bool(self._when(fields))

    @abc.abstractmethod
    def forward(self, inputs: dict[str, Any], config: Mapping[str, Any],
                ctx: RunContext) -> dict[str, Any]:
        """Compute the output fields from the input fields and this component's config."""

    def __call__(self, inputs: dict[str, Any], config: Mapping[str, Any],
                 ctx: RunContext) -> dict[str, Any]:
        out = self.forward(inputs, config, ctx)
        if not isinstance(out, dict) or out.keys() != self._output_keys:
            got = sorted(out) if isinstance(out, dict) else type(out).__name__
            raise ConfigError(f"component {self.name!r} returned {got}, "
                              f"declared outputs are {list(self.outputs)}")
        return out

    def param_value(self, config: Mapping[str, Any], param: str, inputs: Mapping[str, Any],
                    ctx: RunContext) -> Any:
        """This input's value of ``param``: global value, or a per-instance selector's choice."""
        spec = self.params[param]
        options = getattr(spec, "options", ())
        return ctx.resolve(param, options, config[param], inputs, spec.scope == "per_instance")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {list(self.inputs)} -> {list(self.outputs)})"


class FunctionComponent(Component):
    """A component whose forward is a plain function ``fn(inputs, config, ctx) -> outputs``."""

    def __init__(self, name: str, fn: Callable[..., dict[str, Any]], inputs: Sequence[str],
                 outputs: Sequence[str], **kwargs: Any) -> None:
        super().__init__(name, inputs, outputs, **kwargs)
        self._fn = fn

    def forward(self, inputs: dict[str, Any], config: Mapping[str, Any],
                ctx: RunContext) -> dict[str, Any]:
        return self._fn(inputs, config, ctx)
