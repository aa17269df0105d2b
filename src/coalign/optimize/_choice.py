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

from coalign.optimize._base import BaseLocalOptimizer, LocalContext
from coalign.rewards import RewardModel

POLICY = "lrf-selector"  # the value the loop records when it proposes a per-instance policy


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
        # coupled params: another option is worth its better variant, as proposed or with the
        # component's tuned params back at their starting values (the loop validates that one)
        scores = [ctx.mean_reward(o) if o == ctx.current or ctx.starting is None
                  else self._variants_score(ctx, o) for o in options]
        self.last_scores = dict(zip(options, scores, strict=True))
        ctx.history.extend(self.last_scores.items())
        # an option the gate already rejected under this config is not drawn again
        weights = [0.0 if ctx.was_rejected(o) else w
                   for o, w in zip(options, softmax(scores, self.tau), strict=True)]
        if not any(weights):
            return ctx.current
        return ctx.rng.choices(options, weights=weights)[0]

    @staticmethod
    def _variants_score(ctx: LocalContext, option: Any) -> float:
        """The better of the option's variants still open (both when neither is: its weight is
        zeroed as exhausted anyway)."""
        kinds = [f for f in (False, True) if ctx.variant_open(option, f)] or [False, True]
        return max(ctx.mean_reward(option, fresh=f) for f in kinds)


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
    """``POLICY``, a global option, or ``current`` (no change) for a per-instance param.

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
        return POLICY
    return options[picks.pop() if len(picks) == 1 else int(np.argmax(scores.mean(axis=0)))]
