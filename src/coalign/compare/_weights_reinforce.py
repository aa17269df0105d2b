"""A policy-gradient baseline on a decider's weights with the global reward (issue 39's
"REINFORCE with the global reward" for a ``Weights`` param).

The decider as a softmax policy over its candidates (``p_i ∝ exp(w · f_i / temperature)``,
the linear scorer of ``WeightsSearch``) at the table's start config: each epoch draws
``samples`` candidates for a batch of train questions, rewards each with the task metric of
picking it, and takes one Adam step on the REINFORCE gradient (advantage: the reward minus the
mean of the same question's draws, scaled to unit variance). After each epoch the greedy
scorer is validated; one that beats every earlier validation enters the lookup.

``lr`` 1.0 was the best of 0.1 / 0.3 / 1.0 on 8 next_item seeds (tuned on the table it is
compared on, which favours the baseline). Charged as the loop's ledger charges: the start
config's validation and its train questions' upstream outputs |val| + |train| runs once, each
draw and each validation question one decider execution (a share of a run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from coalign.compare._decider_grid import DeciderGrid, decider_grid
from coalign.compare._lookup import Lookup, Split, Trajectory

REINFORCE_WEIGHTS = "reinforce (decider weights)"


@dataclass(frozen=True)
class WeightsReinforce:
    """A comparison method (``coalign.compare.Method``); see the module docstring."""

    table: Path
    lr: float = 1.0
    samples: int = 2
    batch: int = 16
    temperature: float = 1.0
    epochs: int = 500

    def __call__(self, lookup: Lookup, split: Split, budget: float, seed: int) -> Trajectory:
        grid = decider_grid(str(self.table))
        config = lookup.config([int(i) for i in lookup.index[0]])
        rng = np.random.default_rng(seed)
        trajectory = Trajectory(REINFORCE_WEIGHTS)
        weights = grid.start.astype(float).copy()
        adam = _Adam(len(weights), self.lr)
        spent = float(len(split.val))
        if spent > budget:
            return trajectory
        best = float(grid.scores(config, weights, list(split.val)).mean())
        trajectory.trials.append((spent, grid.system(lookup, config, weights, split.test), best))
        spent += len(split.train)  # the train questions' upstream outputs, once
        batch = min(self.batch, len(split.train))
        step_cost = (batch * self.samples + len(split.val)) * grid.share
        for _ in range(self.epochs):
            if spent + step_cost > budget:
                break
            spent += step_cost
            questions = rng.choice(np.asarray(split.train), size=batch, replace=False)
            weights = weights + adam.step(self._gradient(grid, config, weights, questions, rng))
            val = float(grid.scores(config, weights, list(split.val)).mean())
            if val > best:
                best = val
                trajectory.trials.append((spent, grid.system(lookup, config, weights, split.test),
                                          val))
        return trajectory

    def _gradient(self, grid: DeciderGrid, config: int, weights: np.ndarray,
                  questions: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The REINFORCE estimate of d E[reward] / d weights on ``questions``' draws."""
        grads, rewards = [], []
        for q in questions:
            f = grid.features[config][int(q)]
            logits = f @ weights / self.temperature
            p = np.exp(logits - logits.max())
            p /= p.sum()
            drawn = rng.choice(len(p), size=self.samples, p=p)
            rewards.append(grid.right[config][int(q)][drawn])
            grads.append([(f[i] - p @ f) / self.temperature for i in drawn])
        r = np.asarray(rewards, dtype=float)
        adv = r - r.mean(axis=1, keepdims=True)
        scale = float(adv.std())
        if scale < 1e-8:
            return np.zeros_like(weights)
        g = np.asarray(grads)  # (questions, samples, features)
        return np.einsum("qs,qsf->f", adv / scale, g) / adv.size


class _Adam:
    """Adam's update for gradient ascent (the baseline has no torch module to hand to
    ``torch.optim``)."""

    def __init__(self, dim: int, lr: float, b1: float = 0.9, b2: float = 0.999) -> None:
        self.lr, self.b1, self.b2, self.t = lr, b1, b2, 0
        self.m, self.v = np.zeros(dim), np.zeros(dim)

    def step(self, grad: np.ndarray) -> np.ndarray:
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * grad
        self.v = self.b2 * self.v + (1 - self.b2) * grad * grad
        m = self.m / (1 - self.b1 ** self.t)
        v = self.v / (1 - self.b2 ** self.t)
        return self.lr * m / (np.sqrt(v) + 1e-8)
