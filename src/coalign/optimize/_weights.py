"""Local optimization of a ``Weights`` param: policy gradient against the component's LRF.

The component must implement ``PolicyComponent``. Each epoch draws several outputs per search input
x_k from the current module, scores them with the component's local reward (the LRF stands in for
the critic, as in the reference's PPO branch), and takes one REINFORCE step — advantage = reward
minus the mean over the same input's draws, normalised — or, with ``ppo=True``, a few PPO-clip
steps on the same draws. The new weights are proposed only if their greedy outputs score higher
under the LRF than the current weights'; the loop's validation gate has the final word.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from coalign.component import PolicyComponent
from coalign.errors import ConfigError
from coalign.optimize._base import BaseLocalOptimizer, LocalView, Scored
from coalign.params import Weights, WeightsValue
from coalign.rewards import single_thread
from coalign.task import Task
from coalign.trace import Step, Trace


def snapshot(module: torch.nn.Module) -> WeightsValue:
    return WeightsValue({k: v.detach().clone() for k, v in module.state_dict().items()})


def policy_of(task: Task, component: str, param: str) -> tuple[PolicyComponent, Weights]:
    """The component as a policy and its ``Weights`` param, or a one-line error saying why not."""
    comp = task.system.component(component)
    spec = comp.params[param]
    if not isinstance(spec, Weights):
        raise ConfigError(f"{component}.{param} is a {spec.kind!r} param, not 'weights'")
    if not isinstance(comp, PolicyComponent) or comp.policy_param != param:
        raise ConfigError(f"{component}.{param}: weights are optimized through the component's "
                          "policy; implement PolicyComponent (log_prob, sample, policy_param)")
    return comp, spec


def group_advantages(rewards: np.ndarray) -> np.ndarray:
    """(inputs × draws) rewards → advantages against each input's mean draw, unit scale; all zero
    when every draw of every input scored the same (nothing to learn from)."""
    adv = rewards - rewards.mean(axis=1, keepdims=True)
    std = float(adv.std())
    return adv / std if std > 1e-8 else np.zeros_like(adv)


def surrogate_loss(logp: torch.Tensor, advantages: torch.Tensor,
                   old_logp: torch.Tensor | None = None, clip: float = 0.2) -> torch.Tensor:
    """REINFORCE loss −E[A log π], or PPO's clipped surrogate when the draws' ``old_logp`` is given
    (at ratio 1 both have the same gradient)."""
    if old_logp is None:
        return -(advantages * logp).mean()
    ratio = torch.exp(logp - old_logp)
    return -torch.min(ratio * advantages,
                      ratio.clamp(1.0 - clip, 1.0 + clip) * advantages).mean()


def policy_step(policy: PolicyComponent, module: torch.nn.Module, optimizer: torch.optim.Optimizer,
                items: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
                advantages: Sequence[float], *, temperature: float = 1.0,
                max_grad_norm: float = 1.0, old_logp: torch.Tensor | None = None,
                clip: float = 0.2) -> torch.Tensor:
    """One optimizer step on (x, y) draws; returns their log-probabilities before the step."""
    logp = torch.stack([policy.log_prob(module, x, y, temperature) for x, y in items])
    adv = torch.as_tensor(np.asarray(advantages, dtype=np.float32))
    loss = surrogate_loss(logp, adv, old_logp, clip)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(module.parameters(), max_grad_norm)
    optimizer.step()
    return logp.detach()


class ReinforceWeightsOptimizer(BaseLocalOptimizer):
    """Policy gradient on a ``Weights`` param with the component's LRF as the reward.

    Args:
        epochs: sampling rounds (one REINFORCE step, or ``ppo_epochs`` PPO steps, each).
        samples: draws per search input per round (the per-input baseline needs >= 2).
        lr: Adam learning rate (a param's own ``Weights.lr``, if it has one, comes first).
        temperature: the policy's sampling temperature while training.
        max_grad_norm: gradient clipping.
        ppo: use the PPO-clip surrogate over ``ppo_epochs`` inner steps per round.
        seed: mixed with the step's rng, so each loop step draws different samples.
        chunk: (epochs, samples) of a step that carries a training run on (``_carry``): a
            short chunk, the next step going on from it; 5 x 2 draws on the four search
            inputs cost about one validation of the component, as a REINFORCE baseline's
            epoch does (picked on next_item seeds 0-7, RESULTS.md).
    """

    def __init__(self, epochs: int = 15, samples: int = 4, lr: float = 0.05,
                 temperature: float = 1.0, max_grad_norm: float = 1.0, *, ppo: bool = False,
                 ppo_epochs: int = 4, clip: float = 0.2, seed: int = 0,
                 chunk: tuple[int, int] = (5, 2)) -> None:
        if min(samples, chunk[1]) < 2:
            raise ConfigError(f"weights optimizer samples must be >= 2 (the baseline is the "
                              f"mean over an input's draws), got {min(samples, chunk[1])}")
        self.epochs, self.samples, self.lr, self.chunk = epochs, samples, lr, chunk
        self.temperature, self.max_grad_norm = temperature, max_grad_norm
        self.ppo, self.ppo_epochs, self.clip, self.seed = ppo, ppo_epochs, clip, seed
        self.curve: list[float] = []  # mean LRF reward of the draws, per epoch (last propose)

    def propose(self, ctx: LocalView) -> list[Scored]:
        policy, spec = policy_of(ctx.task, ctx.component, ctx.param)
        if not ctx.search:
            return []
        current = WeightsValue(ctx.current)
        module = spec.build(current if ctx.carried is None else WeightsValue(ctx.carried))
        module.train()
        optimizer = torch.optim.Adam(module.parameters(), lr=spec.lr or self.lr)
        rng = random.Random(f"reinforce-weights:{self.seed}:{ctx.rng.random()}")
        epochs, samples = self.chunk if ctx.continued else (self.epochs, self.samples)
        self.curve = []
        with single_thread():
            for _ in range(epochs):
                self._epoch(ctx, policy, module, optimizer, rng, samples)
        proposed = WeightsValue(spec.validate(snapshot(module)))
        # the trained weights against the current ones, by their greedy outputs
        return [Scored(current, ctx.mean_reward(current)),
                Scored(proposed, ctx.mean_reward(proposed))]

    def _epoch(self, ctx: LocalView, policy: PolicyComponent, module: torch.nn.Module,
               optimizer: torch.optim.Optimizer, rng: random.Random, samples: int) -> None:
        items = [(x, policy.sample(module, x, rng, self.temperature))
                 for x in ctx.search for _ in range(samples)]
        # every draw is one execution of the component: same accounting as outputs_under
        steps = [Step(ctx.component, 0, dict(x), y) for x, y in items]
        ctx.account.add_traces("local_search", [Trace("search", ctx.config.digest, {}, steps)])
        rewards = np.asarray(ctx.reward.score_batch(ctx.component, items), dtype=np.float64)
        self.curve.append(float(rewards.mean()))
        adv = group_advantages(rewards.reshape(len(ctx.search), samples)).ravel()
        if not adv.any():
            return
        kw = {"temperature": self.temperature, "max_grad_norm": self.max_grad_norm}
        old = policy_step(policy, module, optimizer, items, adv, **kw)
        for _ in range(self.ppo_epochs - 1 if self.ppo else 0):
            policy_step(policy, module, optimizer, items, adv, old_logp=old, clip=self.clip, **kw)
