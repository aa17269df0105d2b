"""Local optimization of a ``Choice``: global by exp(r/τ) sampling, per-instance by the LRF.

A per-instance param has two kinds of candidate: the policy (the LRF picks the option for each
input at inference) and a global switch to one option. When the LRF would pick the same option
for every search input the policy is that switch, only costlier to run, so the switch is proposed;
once a policy is in place, the best global option is proposed against it. The validation gate
decides in both cases.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from coalign.errors import ConfigError
from coalign.optimize._base import BaseLocalOptimizer, LocalView, Scored
from coalign.rewards import RewardModel


class LrfSelector:
    """The per-instance policy as a candidate: the LRF picks the option for each input. Its own
    type, so no option of a param can be mistaken for it; the ledger writes it as
    ``"lrf-selector"`` (``to_json``), as it always has."""

    JSON = "lrf-selector"

    def to_json(self) -> str:
        return self.JSON

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LrfSelector)

    def __hash__(self) -> int:
        return hash(self.JSON)

    def __repr__(self) -> str:
        return "SELECTOR"


SELECTOR = LrfSelector()


def softmax(scores: Sequence[float], tau: float = 1.0) -> list[float]:
    """Probabilities ∝ exp(score / tau), computed stably (max subtracted)."""
    if tau <= 0:
        raise ConfigError(f"temperature tau must be > 0, got {tau}")
    top = max(scores)
    weights = [math.exp((s - top) / tau) for s in scores]
    total = sum(weights)
    return [w / total for w in weights]


class ExpChoiceOptimizer(BaseLocalOptimizer):
    """Scores every option by mean local reward over the search sample and samples one.

    Sampling instead of argmax keeps exploration alive between near-tied options; the validation
    gate rejects a sampled option that is not actually better.
    """

    def __init__(self, tau: float = 1.0) -> None:
        self.tau = tau

    def propose(self, view: LocalView) -> list[Scored]:
        options = view.task.system.component(view.component).params[view.param].options
        return [Scored(o, view.mean_reward(o)) for o in options]

    def pick(self, scored: Sequence[Scored], open_: Sequence[bool], current: Any,
             rng: Any) -> Any:
        """A draw ∝ exp(r/τ) among the open options (the softmax over all of them, so a closed
        option still sets the scale); none open: no change."""
        weights = [w if o else 0.0 for w, o in
                   zip(softmax([s.reward for s in scored], self.tau), open_, strict=True)]
        if not any(weights):
            return current
        return rng.choices([s.value for s in scored], weights=weights)[0]


class RewardSelector:
    """Per-instance choice at inference: the option the LRF ranks highest for this input.

    Scores (x, {"@param": option}) — the form rollouts record with ``choice_key`` — minus
    ``cost_weight`` times the option's relative cost, to trade quality against cost.
    """

    def __init__(self, reward: RewardModel, costs: Mapping[Any, float] | None = None,
                 cost_weight: float = 0.0) -> None:
        self.reward = reward
        self.costs = dict(costs or {})
        self.cost_weight = cost_weight

    def select(self, component: str, param: str, inputs: Mapping[str, Any],
               options: tuple[Any, ...], default: Any) -> Any:
        scores = cost_penalized(option_scores(self.reward, component, param, [inputs], options),
                                options, self.costs, self.cost_weight)[0]
        return options[max(range(len(options)), key=lambda i: (float(scores[i]), -i))]


def option_scores(reward: RewardModel, component: str, param: str,
                  inputs: Sequence[Mapping[str, Any]], options: Sequence[Any]) -> np.ndarray:
    """LRF score of every option on every input, shape (inputs, options): the (x, {"@param":
    option}) items that choice-keyed rollouts train on."""
    items = [(x, {f"@{param}": o}) for x in inputs for o in options]
    if not items:
        return np.zeros((0, len(options)))
    return np.asarray(reward.score_batch(component, items), dtype=float).reshape(
        len(inputs), len(options))


def cost_penalized(scores: np.ndarray, options: Sequence[Any],
                   costs: Mapping[Any, float] | None, weight: float) -> np.ndarray:
    """``scores`` minus ``weight`` times each option's relative cost (missing: cost 0)."""
    if not costs or not weight:
        return scores
    return scores - weight * np.array([costs.get(o, 0.0) for o in options], dtype=float)


def per_instance_proposal(scores: np.ndarray, options: Sequence[Any], current: Any,
                          policy_active: bool, rng: Any, tau: float = 1.0,
                          policy_rejected: bool = False) -> Any:
    """``SELECTOR``, a global option, or ``current`` (no change) for a per-instance param.

    ``scores`` is ``option_scores`` over the search inputs. With the policy in place a global
    option is sampled ∝ exp(mean score / tau) to challenge it; otherwise the policy is proposed
    unless the LRF picks one option for every input, which is then proposed as a global value;
    once the gate has rejected the policy, the option with the best mean score is proposed.
    """
    if not len(scores):
        return current
    if policy_active:
        return rng.choices(list(options), weights=softmax(list(scores.mean(axis=0)), tau))[0]
    picks = {int(i) for i in np.argmax(scores, axis=1)}
    if len(picks) > 1 and not policy_rejected:
        return SELECTOR
    return options[picks.pop() if len(picks) == 1 else int(np.argmax(scores.mean(axis=0)))]
