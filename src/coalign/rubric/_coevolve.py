"""Co-evolution: on-policy RL of the policy against the rubric model's step rewards.

Each iteration samples a batch of training questions, rolls out the current policy and then
takes one gradient step on the shared backbone with the sum of two losses:

* policy: ``-mean_t A_t log pi(a_t | h_t) + kl_coef * KL(pi || pi_ref)`` where ``A_t`` is the
  reward-to-go of the step rewards minus the position-bucketed baseline (``_advantages``) and
  ``pi_ref`` is the frozen warm-up policy;
* rubric model (ARCO only): ``mean_tau (sum_t s_t - R)^2 + beta * KL(mu || mu_ref)``, with the
  KL taken over the generation head's token distributions along the criteria mu just wrote
  (reverse KL, current || reference; ``_losses``). Fixed-criteria and no-criteria variants
  have no generation distribution, so their KL term is 0.

With ``reward="outcome"`` every step's return is the outcome R (plain REINFORCE with the same
baseline and KL) and the rubric model is not trained.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from coalign.data import Example
from coalign.errors import ConfigError
from coalign.rubric._advantages import (
    bucketed_advantages,
    outcome_step_rewards,
    position_bucket,
    reward_to_go,
)
from coalign.rubric._losses import categorical_kl, decomposition_loss
from coalign.rubric._policy import Policy
from coalign.rubric._rubric import RubricModel

__all__ = ["CoevolveConfig", "co_evolve", "frozen_copy"]


@dataclass(frozen=True)
class CoevolveConfig:
    """Co-evolution budget and coefficients."""

    iterations: int = 30
    batch_size: int = 32
    lr: float = 1e-3
    kl_coef: float = 0.05
    beta: float = 0.1
    reward: str = "arco"  # arco | outcome
    seed: int = 0


def frozen_copy(model: torch.nn.Module) -> torch.nn.Module:
    ref = copy.deepcopy(model)
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref.eval()


def co_evolve(
    policy: Policy, rubric: RubricModel, examples: Sequence[Example], config: CoevolveConfig
) -> list[dict[str, float]]:
    """Train in place; returns one statistics row per iteration."""
    if config.reward not in {"arco", "outcome"}:
        raise ConfigError(f"reward must be arco or outcome (got {config.reward!r})")
    rng = random.Random(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    model = policy.model
    ref = frozen_copy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
    history = []
    for _ in range(config.iterations):
        batch = rng.sample(list(examples), min(config.batch_size, len(examples)))
        trajs, decisions = policy.rollout(batch, gen)
        outcomes = torch.tensor([t.reward for t in trajs])
        loss_mu, kl_mu = torch.zeros(()), torch.zeros(())
        if config.reward == "arco":
            contexts = rubric.contexts(trajs)
            crits = rubric.criteria(contexts)  # written by mu, no gradient through the text
            out = rubric.forward(contexts, crits)
            s = out.scores
            step_rewards: list[list[float]] = [[] for _ in trajs]
            for ctx, value in zip(contexts, s.detach().tolist(), strict=True):
                step_rewards[ctx.traj].append(value)
            traj_index = torch.tensor([c.traj for c in contexts])
            loss_mu = decomposition_loss(s, traj_index, outcomes)
            if out.lm_targets.numel():
                with torch.no_grad():
                    ref_lm = rubric.forward(contexts, crits, model=ref).lm_logits
                kl_mu = categorical_kl(out.lm_logits, ref_lm)
                loss_mu = loss_mu + config.beta * kl_mu
        else:
            step_rewards = [outcome_step_rewards(len(t.steps), t.reward) for t in trajs]
        returns = {(i, t): g for i, rs in enumerate(step_rewards)
                   for t, g in enumerate(reward_to_go(rs))}
        flat = [returns[(d.traj, d.position)] for d in decisions]
        buckets = [position_bucket(d.position, d.candidates[d.choice].kind) for d in decisions]
        adv, _ = bucketed_advantages(flat, buckets)
        logits, chosen = policy.decision_logits(decisions)
        with torch.no_grad():
            ref_logits, _ = policy.decision_logits(decisions, model=ref)
        logp = torch.log_softmax(logits, -1).gather(1, chosen.unsqueeze(1)).squeeze(1)
        kl_pi = categorical_kl(logits, ref_logits)
        loss_pi = -(torch.tensor(adv) * logp).mean() + config.kl_coef * kl_pi
        opt.zero_grad()
        (loss_pi + loss_mu).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        history.append({"reward": float(outcomes.mean()), "loss_mu": float(loss_mu.detach()),
                        "kl_pi": float(kl_pi.detach()), "kl_mu": float(kl_mu.detach())})
    model.eval()
    return history
