"""``PassageReranker``: a small trainable scorer over frozen sentence embeddings, run as a policy.

The scorer (a ``Weights`` param) maps features of each (query, passage) pair to a score. Greedy
runs sort by score; rollouts (``ctx.sampling`` with temperature > 0) draw an order from the
Plackett–Luce distribution the scores define (Gumbel top-k with the step's seeded rng), so
Monte-Carlo rollouts and policy-gradient optimizers see diverse, reproducible candidates.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from coalign.component._policy import (
    MINILM_DIM,
    EncoderPolicy,
    PolicyComponent,
    encoder_dim,
    gumbel_top_k,
)
from coalign.component._retriever import passage_text
from coalign.errors import ConfigError
from coalign.params import Weights
from coalign.runtime import RunContext

__all__ = ["PassageReranker", "PolicyComponent", "RerankScorer", "gumbel_top_k",
           "plackett_luce_log_prob"]


def plackett_luce_log_prob(logits: torch.Tensor, order: Sequence[int]) -> torch.Tensor:
    """log P(the first picks are ``order``) under Plackett–Luce(``logits``); ``order`` may be a
    prefix (top-k kept), whose remaining items still sit in every denominator."""
    chosen = list(order)
    taken = set(chosen)
    perm = logits[chosen + [i for i in range(len(logits)) if i not in taken]]
    # denominators: log Σ exp over the items not yet picked = reversed cumulative logsumexp
    suffix = torch.logcumsumexp(perm.flip(0), 0).flip(0)
    k = len(chosen)
    return (perm[:k] - suffix[:k]).sum()


class RerankScorer(nn.Module):
    """score_i = prior · (−position_i) + out(body(features_i)).

    ``out`` starts at zero and ``prior`` is positive, so the untrained scorer reproduces the
    incoming order exactly (adding a reranker cannot hurt the unoptimized system) while rollouts
    at temperature 1 still mostly swap neighbours. Features per passage: q⊙p, |q−p| (the usual
    sentence-pair features), cos(q, p) and 1/(1 + position).
    """

    def __init__(self, dim: int = MINILM_DIM, hidden: int = 32, prior: float = 1.0) -> None:
        super().__init__()
        n_in = 2 * dim + 2
        self.dim = dim
        self.prior = nn.Parameter(torch.tensor(float(prior)))
        self.body: nn.Module = (nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh()) if hidden
                                else nn.Identity())
        self.out = nn.Linear(hidden or n_in, 1)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, features: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        return -self.prior * position + self.out(self.body(features)).squeeze(-1)


def seeded_scorer(dim: int, hidden: int, prior: float, seed: int) -> RerankScorer:
    """A scorer whose random hidden layer is the same in every process (a stable default)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return RerankScorer(dim, hidden, prior)


def pair_features(query: torch.Tensor, passages: torch.Tensor) -> torch.Tensor:
    """Rows [q⊙p, |q−p|, cos, 1/(1+i)] for L2-normalized embeddings ``query`` (d) and ``passages``
    (n × d)."""
    n = passages.shape[0]
    cos = passages @ query
    recip = 1.0 / (torch.arange(n, dtype=torch.float32) + 1.0)
    return torch.cat([passages * query, (passages - query).abs(), cos[:, None], recip[:, None]],
                     dim=1)


class PassageReranker(EncoderPolicy):
    """Reorders ``passages_field`` for ``query_field`` and keeps the top ``keep`` (all if None).

    Args:
        backbone: the frozen text encoder (anything with ``embed`` and ``dim``, e.g. the LRF's);
            default: the bundled MiniLM, loaded on first use and cached per text.
        hidden: width of the scorer's hidden layer (0: a linear scorer).
        prior: initial weight on the incoming order.
    """

    def __init__(self, name: str, query_field: str = "question",
                 passages_field: str = "candidates", output: str = "passages", *,
                 keep: int | None = None, backbone: Any = None, hidden: int = 32,
                 prior: float = 1.0, seed: int = 0, description: str = "", **kwargs: Any) -> None:
        if keep is not None and keep < 1:
            raise ConfigError(f"reranker {name!r}: keep must be >= 1 or None, got {keep}")
        scorer = Weights(functools.partial(seeded_scorer, encoder_dim(backbone), hidden, prior,
                                           seed),
                         description="passage scorer over frozen sentence embeddings")
        super().__init__(name, (query_field, passages_field), (output,), backbone=backbone,
                         params={self.policy_param: scorer},
                         description=description or f"reorders the {passages_field}, those "
                                                    f"that answer the {query_field} first",
                         **kwargs)
        self.query_field, self.passages_field, self.output = query_field, passages_field, output
        self.keep = keep

    def scores(self, module: nn.Module, inputs: Mapping[str, Any]) -> torch.Tensor:
        """One score per incoming passage (differentiable in ``module``)."""
        passages = list(inputs[self.passages_field] or [])
        texts = [str(inputs[self.query_field] or "")] + [passage_text(p) for p in passages]
        emb = self.embed(texts)
        position = torch.arange(len(passages), dtype=torch.float32)
        return module(pair_features(emb[0], emb[1:]), position)

    def _kept(self, n: int) -> int:
        return n if self.keep is None else min(self.keep, n)

    def sample(self, module: Any, inputs: Mapping[str, Any], rng: random.Random,
               temperature: float = 1.0) -> dict[str, Any]:
        passages = list(inputs[self.passages_field] or [])
        with torch.no_grad():
            logits = (self.scores(module, inputs) / temperature).tolist()
        order = gumbel_top_k(logits, self._kept(len(passages)), rng)
        return {self.output: [passages[i] for i in order]}

    def log_prob(self, module: Any, inputs: Mapping[str, Any], outputs: Mapping[str, Any],
                 temperature: float = 1.0) -> torch.Tensor:
        passages = list(inputs[self.passages_field] or [])
        order = _positions(passages, outputs[self.output], self.name)
        return plackett_luce_log_prob(self.scores(module, inputs) / temperature, order)

    def forward(self, inputs: dict[str, Any], config: Mapping[str, Any],
                ctx: RunContext) -> dict[str, Any]:
        passages = list(inputs[self.passages_field] or [])
        if not passages:
            return {self.output: []}
        module = self.module(config[self.policy_param])
        if ctx.sampling is not None and ctx.sampling.temperature > 0:
            return self.sample(module, inputs, ctx.rng, ctx.sampling.temperature)
        with torch.no_grad():
            s = self.scores(module, inputs).tolist()
        order = sorted(range(len(s)), key=lambda i: (-s[i], i))[: self._kept(len(s))]
        return {self.output: [passages[i] for i in order]}


def _positions(passages: Sequence[Any], chosen: Sequence[Any], name: str) -> list[int]:
    """Index of each chosen passage among the incoming ones (duplicates matched in turn)."""
    used: set[int] = set()
    out = []
    for p in chosen:
        i = next((j for j, q in enumerate(passages) if j not in used and q == p), None)
        if i is None:
            raise ConfigError(f"reranker {name!r}: output passage {passage_text(p)[:60]!r} is "
                              "not among its input passages")
        used.add(i)
        out.append(i)
    return out
