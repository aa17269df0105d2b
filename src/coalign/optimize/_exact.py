"""The exact local reward of a last component: the task metric itself (``terminal_reward``).

For a component that writes the system's output field and that nothing runs after (no
descendant, no loop back to it), the expected downstream reward of an output y on input x is
the task metric of y against the example x came from: there is nothing downstream left to
estimate. Such a component needs no learned head, so no stage-1 rollouts and no adaptation:
its local step scores candidates on the search sample's own train examples. Where two train
examples give the component the same input, an output's reward is the mean over both, the
expectation under the train split.

A per-instance param still needs the learned reward (a selector picks at inference time, when
no label is known), so a component with one is left to the learned reward.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from coalign.data import Example
from coalign.errors import ConfigError
from coalign.pairs import canonical_json, to_jsonable
from coalign.rewards import BaseRewardModel, RewardModel
from coalign.system import System
from coalign.task import Task

EXACT, LEARNED = "exact", "learned"


def is_terminal(system: System, component: str) -> bool:
    """``component`` writes the system's output and no component runs after it."""
    return (system.output in system.component(component).outputs
            and not system.descendants(component))


def exact_components(system: System, targets: Sequence[tuple[str, str]],
                     mode: str) -> frozenset[str]:
    """The target components scored by the task metric under ``terminal_reward: mode``: the
    last component, when every param of it the loop moves is global."""
    if mode == LEARNED:
        return frozenset()
    if mode != EXACT:
        raise ConfigError(f"terminal_reward must be {EXACT!r} or {LEARNED!r}, got {mode!r}")
    return frozenset(
        c for c in dict.fromkeys(c for c, _ in targets) if is_terminal(system, c)
        and all(system.component(c).params[p].scope == "global" for cc, p in targets if cc == c))


def _key(inputs: Mapping[str, Any]) -> str:
    return canonical_json(to_jsonable(dict(inputs)))


class ExactReward(BaseRewardModel):
    """``component``'s reward is the task metric against the train examples behind each
    input (``sample``: (example, the component's input on it) pairs); every other component's
    is ``learned``'s. An input outside the sample is refused: there is no label to score it."""

    def __init__(self, task: Task, component: str,
                 sample: Sequence[tuple[Example, Mapping[str, Any]]],
                 learned: RewardModel) -> None:
        self.task, self.component, self.learned = task, component, learned
        self.examples: dict[str, list[Example]] = {}
        for example, inputs in sample:
            self.examples.setdefault(_key(inputs), []).append(example)

    def score_batch(self, component: str,
                    items: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> np.ndarray:
        if component != self.component:
            return self.learned.score_batch(component, items)
        out = self.task.system.output
        return np.asarray([self._mean_metric(x, y.get(out)) for x, y in items], dtype=float)

    def _mean_metric(self, inputs: Mapping[str, Any], prediction: Any) -> float:
        examples = self.examples.get(_key(inputs))
        if not examples:
            raise ConfigError(f"exact reward of {self.component!r}: an input outside the search "
                              "sample has no train example to score it against")
        return float(np.mean([self.task.metric(prediction, e) for e in examples]))

    def can_score(self, component: str) -> bool:
        return component == self.component or _can_score(self.learned, component)

    def compare(self, pair: Any) -> float:
        return self.compare_batch([pair])[0]


def _can_score(model: RewardModel, component: str) -> bool:
    check = getattr(model, "can_score", None)
    return bool(check(component)) if check is not None else True


def has_reward(model: RewardModel, component: str, exact: Collection[str]) -> bool:
    """``component`` has a local reward: the exact one, or a learned head."""
    return component in exact or _can_score(model, component)
