"""Preference pairs read off a replay table, with exact labels and no LLM call.

For a component k, a question and an upstream config (the values of the params of every other
component that is not downstream of k), each candidate value of k's params gives k an output;
the full path's global reward under the downstream config held at its start values labels it.
Every unordered pair of distinct outputs of k on the same input is a pair: decisive when the
rewards differ, a tie (kept, never trained on) when they do not. Greedy tables make the label
exact: the downstream completion of an output is deterministic, so one completion (m = 1) is
the expectation a label estimates.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from coalign.data import Example
from coalign.errors import ConfigError
from coalign.pairs import PreferencePair, canonical_json, label_for
from coalign.tables._space import config_indices


def table_pairs(table: Any, component: str, questions: Sequence[Example], *,
                tie_threshold: float = 1e-9) -> list[PreferencePair]:
    """Pairs of ``component`` on ``questions`` (finished questions of ``table``, a ``Table``)."""
    from coalign.runner import evaluate

    space = table.space
    task = space.task()
    system = task.system
    own = [k for k in space.params if k.partition(".")[0] == component]
    if not own:
        raise ConfigError(f"component {component!r} has no tabled param in {table.directory}")
    downstream = system.descendants(component)
    held = [k for k in space.params if k.partition(".")[0] in downstream]
    configs = [c for c in space.configs(task)
               if all(i == 0 for k, i in config_indices(c.to_json(), space).items() if k in held)]
    runtime = table.runtime(max_workers=1)
    # group: (question, upstream values) -> [(outputs, reward, own values, inputs)]
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], float, str, dict[str, Any]]]] = {}
    for config in configs:
        idx = config_indices(config.to_json(), space)
        upstream = canonical_json({k: i for k, i in idx.items() if k not in own})
        value = canonical_json({k: idx[k] for k in own})
        for trace in evaluate(task, questions, config, runtime).traces:
            step = trace.step(component)
            groups.setdefault((trace.example_id, upstream), []).append(
                (dict(step.outputs), float(trace.reward or 0.0), value, dict(step.inputs)))
    return _pairs(groups, component, tie_threshold)


def _pairs(groups: dict, component: str, tie_threshold: float) -> list[PreferencePair]:
    out = []
    for (example_id, upstream), members in groups.items():
        distinct: dict[str, tuple] = {}
        for outputs, reward, value, inputs in members:
            # candidates with the same output are one candidate (their paths are the same)
            distinct.setdefault(canonical_json(outputs), (outputs, reward, value, inputs))
        for a, b in itertools.combinations(distinct.values(), 2):
            out.append(PreferencePair(
                component=component, example_id=example_id, inputs=a[3], output_a=a[0],
                output_b=b[0], reward_a=a[1], reward_b=b[1],
                label=label_for(a[1], b[1], tie_threshold), n=len(distinct), m=1,
                meta={"upstream": upstream, "values": [a[2], b[2]]}))
    return out

