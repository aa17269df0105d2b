"""Warm-up and co-evolution on a small generated world (slow: trains a tiny backbone)."""

import copy

import pytest
import torch

from coalign.data import make_world
from coalign.rubric import (
    CoevolveConfig,
    Policy,
    RubricModel,
    RubricSpec,
    SearchEnv,
    WarmupConfig,
    build_encoder,
    co_evolve,
    warm_up,
)
from coalign.rubric._model import ArcoModel, BackboneConfig
from coalign.rubric._warmup import rubric_warmup_loss
from tests.test_rubric_model import one_torch_thread  # noqa: F401  (autouse fixture)


def _setup(spec):
    examples = make_world(seed=3, n_questions=12, n_paragraphs=6)
    torch.manual_seed(0)
    encoder = build_encoder(examples, [], 2000)
    model = ArcoModel(BackboneConfig(len(encoder.vocab), d_model=32, n_layers=1, n_heads=2,
                                     d_ff=64))
    env = SearchEnv()
    return examples, Policy(model, encoder, env), RubricModel(model, encoder, spec)


@pytest.mark.slow
def test_warmup_lowers_its_losses():
    examples, policy, rubric = _setup(RubricSpec(k=2))
    import random

    from coalign.rubric._warmup import collect_sft, replay_decisions
    sft = collect_sft(policy.env, examples, random.Random(0))
    assert sft, "every generated question should have a successful episode"
    decisions = replay_decisions(policy, sft)
    with torch.no_grad():
        logits, target = policy.decision_logits(decisions)
        ce_before = float(torch.nn.functional.cross_entropy(logits, target))
        mu_before = float(rubric_warmup_loss(rubric, sft))
    stats = warm_up(policy, rubric, examples, WarmupConfig(epochs=4, batch_size=8, lr=5e-3),
                    sft_trajs=sft)
    with torch.no_grad():
        logits, target = policy.decision_logits(decisions)
        assert float(torch.nn.functional.cross_entropy(logits, target)) < ce_before
        assert float(rubric_warmup_loss(rubric, sft)) < mu_before
    assert stats["sft_trajectories"] == len(sft)


@pytest.mark.slow
@pytest.mark.parametrize("reward", ["arco", "outcome"])
def test_co_evolution_starts_at_zero_kl_and_moves_the_model(reward):
    examples, policy, rubric = _setup(RubricSpec(k=2))
    before = copy.deepcopy(policy.model.state_dict())
    hist = co_evolve(policy, rubric, examples,
                     CoevolveConfig(iterations=2, batch_size=6, reward=reward, lr=1e-2))
    assert len(hist) == 2
    # The reference is a frozen copy taken at the start: both KL terms are 0 there.
    assert hist[0]["kl_pi"] == pytest.approx(0.0, abs=1e-6)
    assert hist[0]["kl_mu"] == pytest.approx(0.0, abs=1e-6)
    after = policy.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    if reward == "outcome":
        assert all(h["loss_mu"] == 0.0 for h in hist)
    else:
        assert hist[0]["loss_mu"] > 0.0
