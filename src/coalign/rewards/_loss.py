"""Pairwise Bradley–Terry loss: -log σ(r⁺ − r⁻), written as softplus(r⁻ − r⁺).

The softplus form never evaluates exp of a large positive number nor log of an underflowed
sigmoid, so it stays finite for any gap (a naive -log(1/(1+exp(-gap))) gives inf at gap ≈ -800).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def pairwise_loss(chosen: torch.Tensor, rejected: torch.Tensor) -> torch.Tensor:
    """Mean of -log σ(chosen − rejected) over a batch of score pairs."""
    return F.softplus(rejected - chosen).mean()


def pairwise_loss_value(chosen: float, rejected: float) -> float:
    """The same loss for one pair of plain floats."""
    gap = chosen - rejected
    # softplus(-gap) = max(-gap, 0) + log1p(exp(-|gap|)), exact and overflow-free
    return max(-gap, 0.0) + math.log1p(math.exp(-abs(gap)))


def preference_probability(score_a: float, score_b: float) -> float:
    """Bradley–Terry probability that ``a`` is preferred: σ(score_a − score_b)."""
    gap = score_a - score_b
    if gap >= 0:
        return 1.0 / (1.0 + math.exp(-gap))
    e = math.exp(gap)
    return e / (1.0 + e)
