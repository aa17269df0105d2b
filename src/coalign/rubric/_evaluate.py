"""Measurements: EM of a policy, decomposition error and credit-assignment ROC-AUC of mu."""

from __future__ import annotations

from collections.abc import Sequence

from coalign.data import Example
from coalign.rubric._env import Trajectory
from coalign.rubric._policy import Policy
from coalign.rubric._rubric import StepRubric

__all__ = ["credit_pairs", "decomposition_mse", "exact_match_rate", "roc_auc"]


def exact_match_rate(policy: Policy, examples: Sequence[Example], batch: int = 64) -> float:
    """Mean EM of greedy episodes on ``examples``."""
    if not examples:
        return float("nan")
    total = 0.0
    for i in range(0, len(examples), batch):
        trajs, _ = policy.rollout(examples[i : i + batch], greedy=True)
        total += sum(t.reward for t in trajs)
    return total / len(examples)


def decomposition_mse(trajs: Sequence[Trajectory], rubrics: Sequence[Sequence[StepRubric]]
                      ) -> float:
    """Mean over trajectories of (sum_t s_t - R)^2."""
    errs = [(sum(r.score for r in rs) - t.reward) ** 2
            for t, rs in zip(trajs, rubrics, strict=True)]
    return sum(errs) / len(errs)


def credit_pairs(trajs: Sequence[Trajectory], step_scores: Sequence[Sequence[float]]
                 ) -> tuple[list[float], list[bool]]:
    """(score, gold usefulness) of every *search* step (answer steps have no gold label)."""
    scores, labels = [], []
    for traj, ss in zip(trajs, step_scores, strict=True):
        for step, s in zip(traj.steps, ss, strict=True):
            if step.gold_useful is not None:
                scores.append(s)
                labels.append(step.gold_useful)
    return scores, labels


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """Probability a random positive outscores a random negative (ties count 1/2).

    NaN when one class is absent.
    """
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan")
    # Rank-sum (Mann-Whitney U) with average ranks for ties: O(n log n).
    ordered = sorted((s, y) for s, y in zip(scores, labels, strict=True))
    rank_sum, i = 0.0, 0
    while i < len(ordered):
        j = i
        while j < len(ordered) and ordered[j][0] == ordered[i][0]:
            j += 1
        avg_rank = (i + 1 + j) / 2
        rank_sum += avg_rank * sum(1 for k in range(i, j) if ordered[k][1])
        i = j
    u = rank_sum - len(pos) * (len(pos) + 1) / 2
    return u / (len(pos) * len(neg))
