"""Optional backbone fine-tuning (LoRA via peft, or the last layers) and its save/load."""

from __future__ import annotations

import numpy as np
import pytest

from coalign.errors import ConfigError, StoreError
from coalign.rewards import (
    FinetuneConfig,
    HashingBackbone,
    LocalRewardModel,
    MiniLMBackbone,
    TrainConfig,
    finetune_backbone,
    load_reward_model,
    pairwise_accuracy,
    save_reward_model,
)
from tests.rewards_support import qa_pairs

DESC = {"answer": "Answer generator: short answer from the passages"}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["lora", "last_layers"])
def test_finetune_changes_encoder_and_round_trips(mode: str, tmp_path) -> None:
    backbone = MiniLMBackbone()  # a fresh one: fine-tuning changes it
    base_id = backbone.id
    model = LocalRewardModel(backbone, DESC, TrainConfig(epochs=20))
    train, probe = qa_pairs(24, seed=1), qa_pairs(4, seed=2)
    frozen = backbone.embed(["In which city was Alda born?"])
    config = FinetuneConfig(mode=mode, max_steps=3, batch_size=8, lr=1e-3)
    report = finetune_backbone(model, train, config)
    assert report.pairs == {"answer": 24} and report.train_s > 0
    assert backbone.id != base_id and backbone.id.startswith(base_id)
    tuned = backbone.embed(["In which city was Alda born?"])
    assert not np.allclose(frozen, tuned, atol=1e-4)  # new id: the cache was not reused
    assert not any(p.requires_grad for p in backbone.model.parameters())
    items = [(p.inputs, p.output_a) for p in probe]
    scores = model.score_batch("answer", items)
    assert pairwise_accuracy(model, probe).mean >= 0.75

    folder = save_reward_model(model, tmp_path / "lrf")
    assert (folder / "backbone.safetensors").is_file()
    loaded = load_reward_model(folder, MiniLMBackbone())
    assert loaded.backbone.id == backbone.id
    assert np.allclose(loaded.score_batch("answer", items), scores, atol=1e-5)
    with pytest.raises(StoreError, match="fresh MiniLMBackbone"):
        load_reward_model(folder, HashingBackbone())


def test_finetune_refuses_non_transformer_backbone_and_bad_mode() -> None:
    model = LocalRewardModel(HashingBackbone(), DESC)
    with pytest.raises(ConfigError, match="sentence-transformers backbone"):
        finetune_backbone(model, qa_pairs(4, seed=1))
    with pytest.raises(ConfigError, match="finetune mode 'full'"):
        FinetuneConfig(mode="full")


def test_lora_only_trains_adapter_weights() -> None:
    from coalign.rewards._finetune import prepare_backbone

    backbone = MiniLMBackbone()
    params = prepare_backbone(backbone, FinetuneConfig(rank=4))
    names = [n for n, p in backbone.model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    assert sum(p.numel() for p in params) == 6 * 2 * 2 * 4 * 384  # 6 layers, q+v, A+B
    # one pass: gradients reach only the adapters, and the base weights stay untouched
    emb = backbone.forward_trainable(["a short text", "another text"])
    emb.sum().backward()
    grads = [n for n, p in backbone.model.named_parameters() if p.grad is not None]
    assert grads and set(grads) <= set(names)
