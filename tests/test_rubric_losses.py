"""Decomposition loss, KL penalties (zero at initialization), target projection."""

import copy

import pytest
import torch

from coalign.rubric import (
    ArcoModel,
    BackboneConfig,
    categorical_kl,
    decomposition_loss,
    decomposition_sq_errors,
    project_to_sum,
)


def test_decomposition_loss_zero_when_scores_sum_to_outcome():
    s = torch.tensor([0.25, 0.75, -0.5, 0.5, 0.0])
    traj = torch.tensor([0, 0, 1, 1, 2])
    outcomes = torch.tensor([1.0, 0.0, 0.0])
    assert float(decomposition_loss(s, traj, outcomes)) == 0.0


def test_decomposition_loss_value_and_gradient():
    s = torch.tensor([0.5, 0.5, 0.2], requires_grad=True)
    traj = torch.tensor([0, 0, 1])
    outcomes = torch.tensor([0.0, 1.0])
    errs = decomposition_sq_errors(s, traj, outcomes)
    assert errs.tolist() == pytest.approx([1.0, 0.64])
    loss = decomposition_loss(s, traj, outcomes)
    loss.backward()
    # d/ds of mean_tau (sum - R)^2 = 2 (sum - R) / n_traj
    assert s.grad.tolist() == pytest.approx([1.0, 1.0, -0.8])


def test_categorical_kl_direction_and_zero():
    p_logits = torch.tensor([[2.0, 0.0, -1.0]])
    q_logits = torch.tensor([[0.0, 0.0, 0.0]])
    p = torch.softmax(p_logits, -1)
    expected = float((p * (p.log() - torch.full_like(p, 1 / 3).log())).sum())
    assert float(categorical_kl(p_logits, q_logits)) == pytest.approx(expected, rel=1e-6)
    assert float(categorical_kl(q_logits, p_logits)) != pytest.approx(expected, rel=1e-3)
    assert float(categorical_kl(p_logits, p_logits)) == pytest.approx(0.0, abs=1e-7)


def test_categorical_kl_mask_and_padded_slots():
    a = torch.tensor([[1.0, 2.0, -1e9], [0.0, 5.0, 1.0]])
    b = torch.tensor([[1.0, 2.0, -1e9], [3.0, 0.0, 1.0]])
    only_first = categorical_kl(a, b, mask=torch.tensor([True, False]))
    assert float(only_first) == pytest.approx(0.0, abs=1e-7)
    assert torch.isfinite(categorical_kl(a, b))


def test_generation_kl_is_zero_at_initialization():
    torch.manual_seed(0)
    model = ArcoModel(BackboneConfig(vocab_size=50, d_model=16, n_layers=1, n_heads=2, d_ff=32))
    ref = copy.deepcopy(model)
    ids = torch.randint(0, 50, (3, 12))
    with torch.no_grad():
        logits = model.lm_logits(model(ids)[0])
        ref_logits = ref.lm_logits(ref(ids)[0])
        assert float(categorical_kl(logits, ref_logits)) == pytest.approx(0.0, abs=1e-6)
        model.embed.weight.add_(0.5 * torch.randn_like(model.embed.weight))
        assert float(categorical_kl(model.lm_logits(model(ids)[0]), ref_logits)) > 1e-4


def test_projection_meets_sum_and_box():
    for raw, total in [([0.9, 0.8, 0.7], 0.0), ([-1.0, -1.0], 1.0), ([0.2], 1.0), ([1, 1, 1], 3)]:
        out = project_to_sum(raw, total)
        assert sum(out) == pytest.approx(total, abs=1e-9)
        assert all(-1.0 <= x <= 1.0 for x in out)
    # Without active bounds, the projection shifts every entry equally.
    assert project_to_sum([0.5, 0.1, -0.3], 0.0) == pytest.approx([0.4, 0.0, -0.4])
    # Clipped entries stay at the bound while the others absorb the difference.
    assert project_to_sum([1.0, 0.0], 1.6) == pytest.approx([1.0, 0.6])
    assert project_to_sum([], 1.0) == []
