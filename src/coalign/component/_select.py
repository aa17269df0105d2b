"""``Select``: a component whose output is the option its ``Choice`` param takes for this input."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coalign.component._base import Component
from coalign.params import Choice, Scope
from coalign.runtime import RunContext


class Select(Component):
    """E.g. a model selector or a passage picker; per-instance scope defers to a selector."""

    def __init__(self, name: str, inputs: Sequence[str], output: str, options: Sequence[Any], *,
                 default: Any = None, scope: Scope = "per_instance", description: str = "",
                 **kwargs: Any) -> None:
        super().__init__(name, inputs, (output,),
                         params={"option": Choice(list(options), default, scope=scope)},
                         description=description or f"selects one of {list(options)}", **kwargs)
        self.output = output

    def forward(self, inputs: dict[str, Any], config: Mapping[str, Any],
                ctx: RunContext) -> dict[str, Any]:
        return {self.output: self.param_value(config, "option", inputs, ctx)}
