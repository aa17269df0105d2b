"""Per-component heads and the seeded pairwise training loop that fits them.

A head maps [embedding ‖ standardized features] to one scalar. Training works on indices into a
matrix of distinct rendered items, so each text is embedded once however many pairs share it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from coalign.errors import ConfigError
from coalign.rewards._loss import pairwise_loss
from coalign.rewards._threads import single_thread


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of stage 1 (``fit``) and stage 2 (``adapt``).

    Attributes:
        head: "mlp" (one hidden layer) or "linear".
        hidden: hidden width of the MLP head.
        use_features: append the cheap features to the embedding.
        use_embedding: read the embedding at all (False: the features alone; on a replay
            table's HotpotQA answer pairs a features-only pairwise model ranked held-out inputs
            at 0.77 where the embedding-and-features head reached 0.64).
        epochs: stage-1 passes over the pairs.
        lr: stage-1 Adam learning rate.
        weight_decay: L2 penalty (AdamW) against over-fitting small pair sets.
        batch_size: pairs per step.
        min_steps: stage 1 runs at least this many steps (more epochs on small pair sets).
        max_steps: cap on stage-1 steps per component (bounds time on large pair sets).
        seed: seeds head initialization, batching, buffer and fresh-input sampling.
        adapt_epochs: stage-2 passes over the fresh + replayed pairs.
        adapt_lr: stage-2 learning rate.
        fresh_inputs: stage 2 uses the pairs of at most this many distinct fresh inputs.
        replay_ratio: replayed buffer pairs mixed in per fresh pair.
        buffer_size: replay buffer capacity per component.
        use_checks: add the gold-free checks components declare (``coalign.rewards.Check``),
            weighed by the pairs' evidence, to the heads' scores.
        residual_heads: with checks, train each head on what its checks leave unexplained
            (their weighted scores a fixed part of every item's score in the loss) instead of
            on the pairs alone with the checks added after.
    """

    head: str = "linear"
    hidden: int = 64
    use_features: bool = True
    use_embedding: bool = True
    epochs: int = 60
    lr: float = 1e-2
    weight_decay: float = 1e-2
    batch_size: int = 64
    min_steps: int = 300
    max_steps: int = 3000
    seed: int = 0
    adapt_epochs: int = 30
    adapt_lr: float = 1e-2
    fresh_inputs: int = 20
    replay_ratio: float = 3.0
    buffer_size: int = 1000
    use_checks: bool = True
    residual_heads: bool = False

    def __post_init__(self) -> None:
        if not (self.use_embedding or self.use_features):
            raise ConfigError("rewards head reads nothing: keep use_embedding or use_features")
        if self.head not in ("mlp", "linear"):
            raise ConfigError(f"rewards head {self.head!r} is unknown; choose 'mlp' or 'linear'")
        for name in ("hidden", "epochs", "batch_size", "max_steps", "fresh_inputs", "buffer_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"rewards {name} must be >= 1 (got {getattr(self, name)})")


FEATURE_CLIP = 5.0  # standardized features are clipped: outliers cannot dominate a head


class ComponentHead(nn.Module):
    """Standardizes the features, then scores with a linear layer or a one-hidden-layer MLP."""

    def __init__(self, emb_dim: int, n_features: int, kind: str, hidden: int,
                 use_embedding: bool = True) -> None:
        super().__init__()
        self.emb_dim = emb_dim
        self.use_embedding = use_embedding
        self.n_features = n_features
        self.kind = kind
        self.hidden = hidden
        self.register_buffer("feat_mean", torch.zeros(n_features))
        self.register_buffer("feat_std", torch.ones(n_features))
        in_dim = (emb_dim if use_embedding else 0) + n_features
        if kind == "linear":
            self.net: nn.Module = nn.Linear(in_dim, 1)
        else:
            self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, 1))

    def set_feature_stats(self, feats: torch.Tensor) -> None:
        if self.n_features and len(feats):
            self.feat_mean.copy_(feats.mean(0))
            std = feats.std(0, unbiased=False)
            # a feature constant in training (no empty output seen) keeps its raw scale: dividing
            # by a ~0 std would turn its first non-constant value at scoring time into a huge input
            self.feat_std.copy_(torch.where(std < 1e-3, torch.ones_like(std), std))

    def forward(self, emb: torch.Tensor, feats: torch.Tensor) -> torch.Tensor:
        x = emb if self.use_embedding else emb[..., :0]
        if self.n_features:
            z = ((feats - self.feat_mean) / self.feat_std).clamp(-FEATURE_CLIP, FEATURE_CLIP)
            x = torch.cat([x, z], dim=-1)
        return self.net(x).squeeze(-1)


def make_head(emb_dim: int, n_features: int, config: TrainConfig, seed: int) -> ComponentHead:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ComponentHead(emb_dim, n_features, config.head, config.hidden,
                             config.use_embedding)


@single_thread()
def train_head(
    head: ComponentHead,
    emb: torch.Tensor,
    feats: torch.Tensor,
    chosen: torch.Tensor,
    rejected: torch.Tensor,
    *,
    epochs: int,
    lr: float,
    weight_decay: float,
    batch_size: int,
    max_steps: int,
    seed: int,
    offset: torch.Tensor | None = None,
) -> float:
    """Minimize the pairwise loss over (chosen[i], rejected[i]) item indices; returns final loss.
    ``offset``: a fixed score per item added to the head's (the checks' part of the reward), so
    the head learns what the offset leaves unexplained."""
    if offset is None:
        offset = torch.zeros(len(emb))
    offset = offset.to(torch.float32)

    def score(items: torch.Tensor) -> torch.Tensor:
        return head(emb[items], feats[items]) + offset[items]

    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=weight_decay)
    n = len(chosen)
    steps = 0
    head.train()
    for _ in range(epochs):
        order = torch.randperm(n, generator=gen)
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            c, r = chosen[idx], rejected[idx]
            loss = pairwise_loss(score(c), score(r))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            steps += 1
            if steps >= max_steps:
                break
        if steps >= max_steps:
            break
    head.eval()
    with torch.no_grad():
        return float(pairwise_loss(score(chosen), score(rejected)))
