"""Optional backbone fine-tuning: LoRA adapters (peft) or the last encoder layers, trained jointly
with the component heads on the pairwise loss.

The frozen backbone cannot learn what the reward depends on when the embedding does not already
separate it; fine-tuning lets it. It changes the encoder, so the backbone's ``id`` gains a tag
derived from the new weights and cached embeddings of the old encoder are never reused.
Works with a sentence-transformers backbone over a Hugging Face model (``MiniLMBackbone``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from coalign.errors import ConfigError, DataError
from coalign.pairs import PreferencePair
from coalign.rewards._backbone import MiniLMBackbone
from coalign.rewards._features import features
from coalign.rewards._loss import pairwise_loss
from coalign.rewards._model import FitReport, LocalRewardModel


@dataclass(frozen=True)
class FinetuneConfig:
    """How to fine-tune the encoder.

    Attributes:
        mode: "lora" (peft adapters on ``target_modules``) or "last_layers" (unfreeze the top
            ``last_layers`` transformer layers).
        rank, alpha, dropout, target_modules: LoRA settings.
        last_layers: layers unfrozen in "last_layers" mode.
        epochs, batch_size, max_steps: pass count, pairs per step, step cap.
        lr: encoder learning rate; head_lr: heads' learning rate.
        seed: seeds adapter initialization and batching.
    """

    mode: str = "lora"
    rank: int = 8
    alpha: int = 16
    dropout: float = 0.05
    target_modules: tuple[str, ...] = ("query", "value")
    last_layers: int = 1
    epochs: int = 1
    batch_size: int = 16
    max_steps: int = 200
    lr: float = 3e-4
    head_lr: float = 1e-3
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in ("lora", "last_layers"):
            raise ConfigError(
                f"finetune mode {self.mode!r} is unknown; choose 'lora' or 'last_layers'"
            )


def prepare_backbone(backbone: MiniLMBackbone, config: FinetuneConfig) -> list[torch.nn.Parameter]:
    """Make the chosen encoder weights trainable (wrapping with LoRA if asked); returns them."""
    transformer = backbone.model[0]
    auto = transformer.auto_model
    for p in auto.parameters():
        p.requires_grad_(False)
    if config.mode == "lora":
        try:
            from peft import LoraConfig, get_peft_model
        except ImportError as exc:
            raise ConfigError("finetune mode 'lora' needs peft; run `pip install peft`") from exc
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            lora = LoraConfig(
                r=config.rank,
                lora_alpha=config.alpha,
                lora_dropout=config.dropout,
                target_modules=list(config.target_modules),
            )
            transformer.auto_model = get_peft_model(auto, lora)
    else:
        layers = auto.encoder.layer
        for layer in layers[len(layers) - config.last_layers :]:
            for p in layer.parameters():
                p.requires_grad_(True)
    return [p for p in transformer.auto_model.parameters() if p.requires_grad]


def _tuned(name: str, config: FinetuneConfig, n_layers: int) -> bool:
    if config.mode == "lora":
        return "lora_" in name
    top = range(n_layers - config.last_layers, n_layers)
    return any(f"encoder.layer.{i}." in name for i in top)


def trainable_state(backbone: MiniLMBackbone, config: FinetuneConfig) -> dict[str, torch.Tensor]:
    """The fine-tuned tensors (what must be saved beside the heads)."""
    auto = backbone.model[0].auto_model
    n_layers = int(auto.config.num_hidden_layers)
    return {
        n: t.detach().clone().contiguous()
        for n, t in auto.state_dict().items()
        if _tuned(n, config, n_layers)
    }


def restore_finetune(
    backbone: MiniLMBackbone, config: FinetuneConfig, state: dict[str, torch.Tensor]
) -> None:
    """Re-apply a saved fine-tuning (adapter layout + weights) to a fresh backbone."""
    if backbone.adapter_tag:
        raise ConfigError("restore_finetune needs a fresh (not fine-tuned) backbone")
    prepare_backbone(backbone, config)
    auto = backbone.model[0].auto_model
    expected = set(trainable_state(backbone, config))
    if set(state) != expected:
        raise DataError(
            f"fine-tuned weights do not match the {config.mode} layout "
            f"({len(state)} tensors saved, {len(expected)} expected)"
        )
    auto.load_state_dict(state, strict=False)
    for p in auto.parameters():
        p.requires_grad_(False)
    backbone.model.eval()
    backbone.finetune_config = config
    tag_backbone(backbone, config)


def tag_backbone(backbone: MiniLMBackbone, config: FinetuneConfig) -> None:
    h = hashlib.sha256(repr(config).encode())
    for name, tensor in sorted(trainable_state(backbone, config).items()):
        h.update(name.encode())
        h.update(tensor.float().numpy().tobytes())
    backbone.adapter_tag = h.hexdigest()[:12]


def finetune_backbone(
    model: LocalRewardModel, pairs: Sequence[PreferencePair], config: FinetuneConfig | None = None
) -> FitReport:
    """Fit heads on frozen embeddings, then train encoder + heads jointly on ``pairs``.

    Returns the joint phase's report; the backbone id changes (new cache keys).
    """
    config = config or FinetuneConfig()
    backbone = model.backbone
    if not isinstance(backbone, MiniLMBackbone):
        raise ConfigError("finetuning needs a sentence-transformers backbone (MiniLMBackbone)")
    if backbone.adapter_tag:
        raise ConfigError(
            "this backbone is already fine-tuned; load a fresh one to fine-tune again"
        )
    train = [p for p in pairs if not p.is_tie]
    if not train:
        raise DataError("finetuning got no non-tie preference pairs")
    model.fit(train)  # warm-start heads on the frozen encoder
    enc_params = prepare_backbone(backbone, config)
    head_params = [p for h in model.heads.values() for p in h.parameters()]
    opt = torch.optim.AdamW(
        [{"params": enc_params, "lr": config.lr}, {"params": head_params, "lr": config.head_lr}]
    )
    gen = torch.Generator().manual_seed(config.seed)
    report = FitReport(ties_skipped=len(pairs) - len(train))
    start = time.perf_counter()
    backbone.model.train()
    steps = 0
    for _ in range(config.epochs):
        order = torch.randperm(len(train), generator=gen).tolist()
        for s in range(0, len(order), config.batch_size):
            batch = [train[i] for i in order[s : s + config.batch_size]]
            loss = _batch_loss(model, batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            steps += 1
            if steps >= config.max_steps:
                break
        if steps >= config.max_steps:
            break
    backbone.model.eval()
    for p in enc_params:
        p.requires_grad_(False)
    for head in model.heads.values():
        head.eval()
    backbone.finetune_config = config
    tag_backbone(backbone, config)
    report.train_s = time.perf_counter() - start
    for pair in train:
        report.pairs[pair.component] = report.pairs.get(pair.component, 0) + 1
    return report


def _batch_loss(model: LocalRewardModel, batch: list[PreferencePair]) -> torch.Tensor:
    backbone = model.backbone
    assert isinstance(backbone, MiniLMBackbone)
    texts, feats = [], []
    for pair in batch:
        for out in (pair.chosen, pair.rejected):
            texts.append(model.render_item(pair.component, pair.inputs, out))
            feats.append(torch.from_numpy(features(pair.inputs, out)))
    emb = backbone.forward_trainable(texts)
    f = torch.stack(feats) if model.n_features else torch.zeros((len(texts), 0))
    scores = []
    for i, pair in enumerate(batch):
        head = model.heads[pair.component]
        scores.append(head(emb[2 * i : 2 * i + 2], f[2 * i : 2 * i + 2]))
    s = torch.stack(scores)
    return pairwise_loss(s[:, 0], s[:, 1])
