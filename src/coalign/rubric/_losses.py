"""Training losses: trajectory decomposition and KL penalties.

KL direction: every penalty here is the *reverse* KL of the current model from its frozen
reference, KL(current || reference) = sum_v p_cur(v) * (log p_cur(v) - log p_ref(v)), computed
exactly over the categorical distribution at each position (the generation head's vocabulary,
or the policy's candidate actions), on states visited by the current model. It is zero exactly
when the two distributions agree, e.g. at initialization when the reference is a copy.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["categorical_kl", "decomposition_loss", "decomposition_sq_errors"]


def decomposition_sq_errors(
    step_scores: torch.Tensor, traj_index: torch.Tensor, outcomes: torch.Tensor
) -> torch.Tensor:
    """(sum_t s_t - R)^2 for each trajectory.

    Args:
        step_scores: ``(n_steps,)`` step rewards s_t of all trajectories, flattened.
        traj_index: ``(n_steps,)`` which trajectory (0..n_traj-1) each step belongs to.
        outcomes: ``(n_traj,)`` terminal rewards R.
    """
    sums = torch.zeros_like(outcomes, dtype=step_scores.dtype)
    sums = sums.index_add(0, traj_index, step_scores)
    return (sums - outcomes.to(step_scores.dtype)) ** 2


def decomposition_loss(
    step_scores: torch.Tensor, traj_index: torch.Tensor, outcomes: torch.Tensor
) -> torch.Tensor:
    """Mean over trajectories of (sum_t s_t - R)^2 (the paper's sum, divided by batch size)."""
    return decomposition_sq_errors(step_scores, traj_index, outcomes).mean()


def categorical_kl(
    logits: torch.Tensor, ref_logits: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean over unmasked positions of KL(softmax(logits) || softmax(ref_logits)).

    ``logits`` and ``ref_logits`` are ``(..., n_classes)``; entries at ``-inf`` (masked-out
    classes) must agree between the two. ``mask`` is ``(...)``, True where a position counts.
    """
    logp = F.log_softmax(logits, dim=-1)
    logq = F.log_softmax(ref_logits, dim=-1)
    p = logp.exp()
    # Classes impossible under p contribute 0 (avoid 0 * (-inf - -inf) = nan).
    terms = torch.where(p > 0, p * (logp - logq), torch.zeros_like(p))
    per_pos = terms.sum(-1)
    if mask is None:
        return per_pos.mean()
    mask = mask.to(per_pos.dtype)
    return (per_pos * mask).sum() / mask.sum().clamp_min(1.0)
