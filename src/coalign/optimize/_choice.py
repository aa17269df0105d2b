"""Local optimization of a ``Choice``: global by exp(r/τ) sampling, per-instance by the LRF."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from coalign.optimize._base import BaseLocalOptimizer, LocalContext
from coalign.rewards import RewardModel


def softmax(scores: Sequence[float], tau: float = 1.0) -> list[float]:
    """Probabilities ∝ exp(score / tau), computed stably (max subtracted)."""
    if tau <= 0:
        raise ValueError(f"temperature tau must be > 0, got {tau}")
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
        self.last_scores: dict[Any, float] = {}

    def propose(self, ctx: LocalContext) -> Any:
        options = ctx.task.system.component(ctx.component).params[ctx.param].options
        scores = [ctx.mean_reward(o) for o in options]
        self.last_scores = dict(zip(options, scores, strict=True))
        return ctx.rng.choices(options, weights=softmax(scores, self.tau))[0]


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
        items = [(inputs, {f"@{param}": o}) for o in options]
        scores = self.reward.score_batch(component, items)
        best = max(range(len(options)), key=lambda i: (
            float(scores[i]) - self.cost_weight * self.costs.get(options[i], 0.0), -i))
        return options[best]
