"""Numerically stable pairwise DPO loss.

For one pair, the DPO margin is ``beta * ((pi_c - pi_r) - (ref_c - ref_r))`` with sequence
log-probabilities of the policy (pi) and the reference, chosen (c) and rejected (r); the loss
is ``-log sigmoid(margin) = softplus(-margin)``. The arithmetic says nothing about whether the
chosen label is right: numerics and supervision validity are separate obligations.
"""

from __future__ import annotations

import math

import numpy as np


def softplus(x: float) -> float:
    """``log(1 + exp(x))`` without overflow: ``max(0, x) + log1p(exp(-|x|))``."""
    return max(0.0, x) + math.log1p(math.exp(-abs(x)))


def dpo_margin(policy_chosen: float, policy_rejected: float,
               reference_chosen: float, reference_rejected: float, beta: float) -> float:
    """The implicit-reward margin of the chosen over the rejected response."""
    return beta * ((policy_chosen - policy_rejected) - (reference_chosen - reference_rejected))


def dpo_loss(policy_chosen: float, policy_rejected: float,
             reference_chosen: float, reference_rejected: float, beta: float) -> float:
    """``softplus(-margin)``; finite for every input the audit's validation accepts.

    >>> round(dpo_loss(-2.0, -4.0, -3.0, -3.0, beta=0.1), 6)
    0.598139
    """
    # The margin is written out (not via dpo_margin) because this runs once per audited pair.
    return softplus(beta * ((policy_rejected - policy_chosen)
                            - (reference_rejected - reference_chosen)))


def dpo_losses(policy_chosen: np.ndarray, policy_rejected: np.ndarray,
               reference_chosen: np.ndarray, reference_rejected: np.ndarray,
               beta: float) -> np.ndarray:
    """``dpo_loss`` over arrays of pairs, with the same stable softplus, element by element."""
    x = beta * ((policy_rejected - policy_chosen) - (reference_rejected - reference_chosen))
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))
