"""A benchmark-only local step over a component's whole finite grid (``rule_ablation.py
--variants joint ...``), to measure before building it into the loop.

The loop's local step ranks the values of one drawn param, the component's other params as they
are. Here the drawn param's step ranks every combination of the component's finite global
params (a code generator's 3 prompts x 2 models: 6 values, 5 open), each scored by the mean
local reward of the component's outputs under it on the search sample; the drawn param's
optimizer picks among the open combinations, and the proposal sets all of them. A rejected
combination is remembered as the drawn param's value with the others' values in the rejection's
``reset`` field (what makes it one entry of the rejection memory).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import Any

from coalign.optimize import _step, value_key
from coalign.optimize._base import LocalView, Scored
from coalign.optimize._outcome import Outcome, Proposal, StepState, tried

_PLAIN = _step.expand  # the loop's own step, for a component with one finite param


def _grid(env: Any, component: str) -> list[tuple[str, tuple[Any, ...]]]:
    comp = env.task.system.component(component)
    out = []
    for c, p in env.targets:
        spec = comp.params[p] if c == component else None
        if spec is None or spec.scope != "global" or spec.kind not in env.settings.kinds:
            continue
        values = env.settings.kinds[spec.kind].finite_values(spec)
        if values:
            out.append((p, tuple(values)))
    return out


def joint_expand(env: Any, at: Any, component: str, param: str, kind: Any,
                 search: Sequence[dict[str, Any]], rng: random.Random) -> Any:
    grid = _grid(env, component)
    names = [p for p, _ in grid]
    if param not in names or len(names) < 2:
        return _PLAIN(env, at, component, param, kind, search, rng)
    i = names.index(param)
    runtime = env.runtime_for(at.policies)
    validated = {v.config.digest for v in at.validated}
    current = tuple(at.config[component][p] for p in names)
    candidates, open_, configs, tags = [], [], {}, {}
    for combo in itertools.product(*(values for _, values in grid)):
        config = at.config
        for p, v in zip(names, combo, strict=True):
            config = config.with_value(component, p, v)
        view = LocalView(env.task, component, param, config, search, at.reward, runtime, rng,
                         env.account)
        key = value_key(list(combo))
        tag = tuple(sorted(f"{p}={value_key(v)}" for j, (p, v) in enumerate(
            zip(names, combo, strict=True)) if j != i))
        configs[key], tags[key] = config, tag
        shut = (tried(component, param, combo[i], tag) in at.rejected
                or (env.settings.proposals == "portfolio" and not at.policies
                    and config.digest in validated))
        candidates.append(Scored(combo, view.mean_reward(combo[i])))
        open_.append(not shut)
    pick = env.optimizers[kind.name].pick(candidates, open_, current, rng)
    key = value_key(list(pick))
    if configs[key].digest == at.config.digest:
        return Outcome(component, param, StepState.NO_CHANGE, at.score, pick[i],
                       candidates=candidates)
    return Proposal(pick[i], configs[key], dict(at.policies), tags[key]), candidates, []
