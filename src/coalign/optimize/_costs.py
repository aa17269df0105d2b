"""The run config's ``choice_costs`` field, checked against the task's per-instance params."""

from __future__ import annotations

import math
from typing import Any

from coalign.errors import ConfigError
from coalign.params import Choice
from coalign.task import Task


def choice_costs(task: Task, raw: dict[str, dict[str, float]]
                 ) -> dict[tuple[str, str], dict[Any, float]]:
    """``choice_costs`` of a run config keyed by (component, param), with the options' own values
    (a JSON key is always a string; ``k: 5`` is option 5). Every name is checked."""
    out: dict[tuple[str, str], dict[Any, float]] = {}
    for slot, costs in raw.items():
        def bad(msg: str, slot: str = slot) -> ConfigError:
            return ConfigError(f"run config field 'choice_costs': {slot}: {msg}")

        comp, _, param = slot.partition(".")
        names = [c.name for c in task.system.components]
        if comp not in names:
            raise bad(f"unknown component {comp!r}; have {names}")
        spec = task.system.component(comp).params.get(param)
        if not isinstance(spec, Choice) or spec.scope != "per_instance":
            raise bad("not a per-instance Choice param (write component.param)")
        by_name = {str(o): o for o in spec.options}
        for option, cost in costs.items():
            if option not in by_name:
                raise bad(f"unknown option {option!r}; options are {list(by_name)}")
            if not math.isfinite(cost) or cost < 0:
                raise bad(f"cost of {option!r} must be a finite number >= 0, got {cost}")
        out[(comp, param)] = {by_name[o]: float(c) for o, c in costs.items()}
    return out
