"""Pairwise Bradley–Terry loss: reference check-figures, stability, identifiability."""

from __future__ import annotations

import math
import random

import pytest
import torch

from coalign.rewards import pairwise_loss, pairwise_loss_value, preference_probability


def test_reference_check_figures() -> None:
    # correctly ordered pair with gap 1.7, then the same scores reversed
    assert pairwise_loss_value(2.1, 0.4) == pytest.approx(0.1678, abs=5e-4)
    assert pairwise_loss_value(0.4, 2.1) == pytest.approx(1.8678, abs=5e-4)
    assert round(pairwise_loss_value(2.1, 0.4), 3) == 0.168
    assert round(pairwise_loss_value(0.4, 2.1), 3) == 1.868


def test_float_and_tensor_forms_agree() -> None:
    chosen = torch.tensor([2.1, 0.4, 0.0, 5.0])
    rejected = torch.tensor([0.4, 2.1, 0.0, -3.0])
    expected = sum(
        pairwise_loss_value(c, r) for c, r in zip(chosen.tolist(), rejected.tolist(), strict=True)
    )
    assert float(pairwise_loss(chosen, rejected)) == pytest.approx(expected / 4, rel=1e-6)


def test_loss_is_finite_at_extreme_gaps() -> None:
    assert pairwise_loss_value(0.0, 1000.0) == pytest.approx(1000.0)
    assert pairwise_loss_value(1000.0, 0.0) == pytest.approx(0.0, abs=1e-12)
    big = pairwise_loss(torch.tensor([-900.0]), torch.tensor([900.0]))
    assert math.isfinite(float(big)) and float(big) == pytest.approx(1800.0)
    # gradient stays bounded (σ of the gap), never NaN
    c = torch.tensor([-900.0], requires_grad=True)
    pairwise_loss(c, torch.tensor([900.0])).backward()
    assert float(c.grad) == pytest.approx(-1.0)


def test_preference_probability_is_sigmoid_of_gap() -> None:
    assert preference_probability(0.7 * 2, 0.3 * 2) == pytest.approx(1 / (1 + math.exp(-0.8)))
    assert preference_probability(-800.0, 0.0) == pytest.approx(0.0, abs=1e-300)
    assert preference_probability(1.0, 1.0) == 0.5


def test_identifiability_learned_reward_reproduces_preference_probability() -> None:
    """True rewards 0.3 / 0.7, β = 2: fit two free scores on sampled labels by the loss."""
    beta, r_a, r_b = 2.0, 0.3, 0.7
    p_true = 1 / (1 + math.exp(-beta * (r_b - r_a)))
    assert p_true == pytest.approx(0.68997, abs=1e-4)
    rng = random.Random(7)
    n = 20000
    b_wins = sum(rng.random() < p_true for _ in range(n))
    scores = torch.zeros(2, requires_grad=True)  # [score_a, score_b]
    opt = torch.optim.Adam([scores], lr=0.05)
    for _ in range(400):
        # b_wins labels say b ≻ a, the rest a ≻ b; mean loss over all sampled labels
        loss = (
            b_wins * pairwise_loss(scores[1:], scores[:1])
            + (n - b_wins) * pairwise_loss(scores[:1], scores[1:])
        ) / n
        opt.zero_grad()
        loss.backward()
        opt.step()
    s_a, s_b = scores.tolist()
    p_learned = preference_probability(s_b, s_a)
    assert p_learned == pytest.approx(p_true, abs=0.01)
    # the learned gap is β·(0.7 − 0.3) = 0.8 up to sampling noise: same order, same scale
    assert s_b - s_a == pytest.approx(beta * (r_b - r_a), abs=0.06)
