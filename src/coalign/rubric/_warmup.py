"""Supervised warm-up of the policy and the rubric model on one shared backbone.

No closed teacher is available offline, so both warm-up signals are derived:

* **Policy (SFT on successful trajectories).** For each training question, every episode
  reachable through the candidate actions is enumerated (at most ~400 with 3 steps); among the
  successful ones (EM = 1) we prefer those whose answer appears in a retrieved passage (a
  grounded answer rather than a guess from the question), then pick one at random. The policy
  is trained with cross-entropy to choose its actions. Questions with no successful episode
  give no SFT data.
* **Rubric model.** Uniformly random episodes plus the SFT episodes, annotated by
  ``warmup_targets`` (derived checklist criteria and projected scores, see ``_criteria``):
  cross-entropy of the generation head on the criteria text (adaptive mode) and squared error
  of the K dimension scores.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from coalign.data import Example
from coalign.rubric._criteria import mentions, warmup_targets
from coalign.rubric._env import SearchEnv, Trajectory
from coalign.rubric._policy import Decision, Policy
from coalign.rubric._rubric import RubricModel, StepContext

__all__ = ["WarmupConfig", "enumerate_successes", "random_rollout", "replay_decisions", "warm_up"]


@dataclass(frozen=True)
class WarmupConfig:
    """Warm-up budget."""

    epochs: int = 8
    batch_size: int = 16
    lr: float = 1e-2
    random_rollouts: int = 2  # per training question, for the rubric data
    seed: int = 0
    adapt_epochs: int = 2  # a variant's own warm-up, continued from the main one


def _branch(traj: Trajectory) -> Trajectory:
    return Trajectory(traj.example, list(traj.steps), traj.reward)


def enumerate_successes(env: SearchEnv, example: Example) -> list[Trajectory]:
    """Every episode with reward 1 reachable through the candidate actions."""
    found, frontier = [], [Trajectory(example)]
    while frontier:
        traj = frontier.pop()
        for action in env.candidates(traj):
            nxt = _branch(traj)
            env.step(nxt, action)
            if nxt.done:
                if nxt.reward > 0:
                    found.append(nxt)
            else:
                frontier.append(nxt)
    return found


def random_rollout(env: SearchEnv, example: Example, rng: random.Random) -> Trajectory:
    """One episode of the uniform policy over candidates."""
    traj = Trajectory(example)
    while not traj.done:
        env.step(traj, rng.choice(env.candidates(traj)))
    return traj


def pick_sft(successes: Sequence[Trajectory], rng: random.Random) -> Trajectory | None:
    """One success, preferring an answer grounded in a retrieved passage."""
    grounded = [
        t for t in successes
        if mentions(" ".join(s.observation for s in t.steps), t.answer or "")
    ]
    pool = grounded or list(successes)
    return rng.choice(pool) if pool else None


def replay_decisions(policy: Policy, trajs: Sequence[Trajectory]) -> list[Decision]:
    """The (state, candidates, choice) records of already-played trajectories."""
    out = []
    for i, traj in enumerate(trajs):
        partial = Trajectory(traj.example)
        for step in traj.steps:
            cands = policy.env.candidates(partial)
            out.append(Decision(i, step.position, tuple(policy.state_ids(partial)),
                                tuple(cands), cands.index(step.action)))
            policy.env.step(partial, step.action)
    return out


def rubric_warmup_loss(rubric: RubricModel, trajs: Sequence[Trajectory]) -> torch.Tensor:
    """Squared error on derived dimension targets (+ criteria-text cross-entropy)."""
    contexts: list[StepContext] = rubric.contexts(trajs)
    crit_ids, dim_targets = [], []
    by_traj = [warmup_targets(t, rubric.spec.k, rubric.spec.mode) for t in trajs]
    for ctx in contexts:
        target = by_traj[ctx.traj][ctx.position]
        texts = target.criteria if rubric.spec.mode != "none" else ("",)
        crit_ids.append([rubric.encoder.criterion(c) for c in texts])
        dim_targets.append(target.dims)
    out = rubric.forward(contexts, crit_ids)
    loss = F.mse_loss(out.dims, torch.tensor(dim_targets, dtype=out.dims.dtype))
    if out.lm_targets.numel():
        loss = loss + F.cross_entropy(out.lm_logits, out.lm_targets)
    return loss


def warm_up(
    policy: Policy, rubric: RubricModel, examples: Sequence[Example], config: WarmupConfig,
    sft_trajs: Sequence[Trajectory] | None = None, adapt: bool = False,
) -> dict[str, float]:
    """Train policy and rubric heads (and the shared backbone) in place; returns statistics.

    ``sft_trajs`` lets several variants share one enumeration of successful episodes.
    ``adapt=True`` runs ``config.adapt_epochs`` epochs instead of ``config.epochs``: how a
    variant's rubric model is warmed up on top of an already warmed-up backbone (the policy
    SFT loss stays on, or the shared backbone would drift away from the warm-up policy).
    """
    rng = random.Random(config.seed)
    env = policy.env
    if sft_trajs is None:
        sft_trajs = collect_sft(env, examples, rng)
    rubric_trajs = list(sft_trajs) + [
        random_rollout(env, e, rng) for e in examples for _ in range(config.random_rollouts)
    ]
    decisions = replay_decisions(policy, sft_trajs)
    model = policy.model
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
    n_batches = max(1, len(rubric_trajs) // config.batch_size)
    dec_per_batch = max(1, -(-len(decisions) // n_batches))
    model.train()
    for _ in range(config.adapt_epochs if adapt else config.epochs):
        ce_sum, mu_sum, n_ce = 0.0, 0.0, 0  # means over the epoch, reported for the last one
        rng.shuffle(rubric_trajs)
        order = list(range(len(decisions)))
        rng.shuffle(order)
        for b in range(n_batches):
            batch = rubric_trajs[b * config.batch_size : (b + 1) * config.batch_size]
            loss_mu = rubric_warmup_loss(rubric, batch)
            chosen = [decisions[i] for i in order[b * dec_per_batch : (b + 1) * dec_per_batch]]
            loss_pi = torch.zeros(())
            if chosen:
                logits, target = policy.decision_logits(chosen)
                loss_pi = F.cross_entropy(logits, target)
                ce_sum, n_ce = ce_sum + float(loss_pi.detach()), n_ce + 1
            opt.zero_grad()
            (loss_pi + loss_mu).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            mu_sum += float(loss_mu.detach())
    model.eval()
    return {"policy_ce": ce_sum / max(n_ce, 1), "rubric_loss": mu_sum / n_batches,
            "sft_trajectories": len(sft_trajs), "rubric_trajectories": len(rubric_trajs)}


def collect_sft(env: SearchEnv, examples: Sequence[Example], rng: random.Random
                ) -> list[Trajectory]:
    """One chosen successful episode per question that has any (see module doc)."""
    picked = [pick_sft(enumerate_successes(env, e), rng) for e in examples]
    return [t for t in picked if t is not None]
