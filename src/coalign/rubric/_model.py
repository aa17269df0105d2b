"""The shared backbone and its three heads: policy, criteria generation, criteria scores.

A small causal transformer trained from scratch on the environment's text (docs/arco.md has the
measured step times that ruled out SmolLM2-135M + LoRA on this machine). One backbone serves the
policy and the rubric model, so decomposition gradients shape the features the criteria are
written and scored in, as in ARCO.

The forward pass takes an optional key/value cache of a *prefix*: candidate actions share their
state's encoding, and criteria are decoded token by token, both without re-encoding the context.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["ArcoModel", "BackboneConfig", "KVCache", "expand_cache", "last_hidden", "pad_batch"]

KVCache = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values (B, H, P, dh)


@dataclass(frozen=True)
class BackboneConfig:
    """Size of the shared causal transformer."""

    vocab_size: int
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 128
    max_len: int = 384

    def to_json(self) -> dict:
        return asdict(self)


def pad_batch(seqs: list[list[int]], pad: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad token lists: ``(ids (B, T), lengths (B,))``."""
    width = max(1, max(len(s) for s in seqs))
    out = torch.full((len(seqs), width), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out, torch.tensor([len(s) for s in seqs], dtype=torch.long)


class _Block(nn.Module):
    def __init__(self, d: int, heads: int, d_ff: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, d_ff), nn.GELU(), nn.Linear(d_ff, d))

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.unsqueeze(1))
        x = x + self.out(att.transpose(1, 2).reshape(b, t, d))
        return x + self.ff(self.ln2(x)), (k, v)


class ArcoModel(nn.Module):
    """Backbone f_theta + policy head + generation head (tied LM) + score head (tanh)."""

    def __init__(self, config: BackboneConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.pos = nn.Embedding(config.max_len, config.d_model)
        self.blocks = nn.ModuleList(
            _Block(config.d_model, config.n_heads, config.d_ff) for _ in range(config.n_layers)
        )
        self.norm = nn.LayerNorm(config.d_model)
        self.policy_head = nn.Linear(config.d_model, 1)
        self.score_head = nn.Linear(config.d_model, 1)
        self.copy_query = nn.Linear(config.d_model, config.d_model, bias=False)
        nn.init.normal_(self.embed.weight, std=0.05)
        nn.init.normal_(self.pos.weight, std=0.02)

    def forward(
        self,
        ids: torch.Tensor,
        past: KVCache | None = None,
        past_valid: torch.Tensor | None = None,
        start: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, KVCache]:
        """Causal features of right-padded ``ids`` (B, T), optionally after a cached prefix.

        Args:
            past: per-layer keys/values of a prefix (B, H, P, dh), already one row per sequence.
            past_valid: (B, P) True where the prefix holds a real token.
            start: (B,) position of each sequence's first new token (its prefix length).

        Returns:
            ``(hidden (B, T, d), cache)``; the cache covers prefix + new tokens.
        """
        b, t = ids.shape
        start = torch.zeros(b, dtype=torch.long) if start is None else start
        positions = start.unsqueeze(1) + torch.arange(t)
        if int(positions.max()) >= self.config.max_len:
            raise ValueError(f"sequence longer than max_len={self.config.max_len}")
        causal = torch.ones(t, t, dtype=torch.bool).tril().expand(b, t, t)
        if past is not None and past_valid is not None:
            mask = torch.cat([past_valid.unsqueeze(1).expand(b, t, -1), causal], dim=2)
        else:
            mask = causal
        x = self.embed(ids) + self.pos(positions)
        cache: KVCache = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, mask, past[i] if past is not None else None)
            cache.append(kv)
        return self.norm(x), cache

    def lm_logits(
        self,
        hidden: torch.Tensor,
        ctx_hidden: torch.Tensor | None = None,
        ctx_ids: torch.Tensor | None = None,
        ctx_valid: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Generation head: next-token log-masses over the vocabulary (N, V).

        Without a context these are the tied-embedding logits. With one (``ctx_*``: (N, L, d),
        (N, L), (N, L)), a copy distribution is mixed in, pointer-generator style: attention
        scores over the context tokens add their mass to those tokens' ids, so criteria can
        name the step's own entities even though the model is tiny and trained from scratch.
        """
        vocab = hidden @ self.embed.weight.T
        if ctx_hidden is None or ctx_ids is None or ctx_valid is None:
            return vocab
        scale = self.config.d_model**-0.5
        copy = torch.einsum("nd,nld->nl", self.copy_query(hidden), ctx_hidden) * scale
        copy = copy.masked_fill(~ctx_valid, float("-inf"))
        top = torch.maximum(vocab.max(-1, keepdim=True).values,
                            copy.max(-1, keepdim=True).values).detach()
        mass = torch.exp(vocab - top).scatter_add(1, ctx_ids, torch.exp(copy - top))
        return torch.log(mass) + top

    def policy_logit(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.policy_head(hidden).squeeze(-1)

    def score(self, hidden: torch.Tensor) -> torch.Tensor:
        """Score head: a dimension score in [-1, 1]."""
        return torch.tanh(self.score_head(hidden).squeeze(-1))


def expand_cache(cache: KVCache, index: torch.Tensor) -> KVCache:
    """Repeat prefix rows so that row i of the result is prefix ``index[i]``."""
    return [(k.index_select(0, index), v.index_select(0, index)) for k, v in cache]


def last_hidden(hidden: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The hidden state of each sequence's last real token."""
    return hidden[torch.arange(hidden.shape[0]), (lengths - 1).clamp_min(0)]
