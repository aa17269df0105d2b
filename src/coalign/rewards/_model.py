"""The local reward functions: one shared backbone, one small head per component.

Stage 1 (``fit``) trains every component's head from its preference pairs on frozen, cached
embeddings. Stage 2 (``adapt``) refines the heads after the system changed, from the pairs of a few
fresh inputs mixed with pairs replayed from a per-component buffer.
"""

from __future__ import annotations

import hashlib
import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from coalign.errors import ConfigError, DataError
from coalign.pairs import PreferencePair, canonical_json
from coalign.rewards._backbone import Backbone
from coalign.rewards._base import BaseRewardModel, Item
from coalign.rewards._checks import Check, Evidence, check_scores, evidence
from coalign.rewards._features import N_FEATURES, features
from coalign.rewards._heads import (
    ComponentHead,
    TrainConfig,
    make_head,
    train_head,
)
from coalign.rewards._render import render
from coalign.rewards._replay import ReplayBuffer
from coalign.rewards._threads import single_thread


@dataclass
class FitReport:
    """What one ``fit``/``adapt`` call trained on and how fast."""

    pairs: dict[str, int] = field(default_factory=dict)  # trained non-tie pairs per component
    ties_skipped: int = 0
    replayed: dict[str, int] = field(default_factory=dict)
    final_loss: dict[str, float] = field(default_factory=dict)
    embed_s: float = 0.0
    train_s: float = 0.0

    @property
    def total_pairs(self) -> int:
        return sum(self.pairs.values())

    @property
    def pairs_per_s(self) -> float:
        """Training pairs per second of the whole call (embedding included)."""
        total = self.embed_s + self.train_s
        return self.total_pairs / total if total > 0 else float("inf")


class LocalRewardModel(BaseRewardModel):
    """Shared backbone + per-component heads over rendered (description, x_k, y_k).

    Args:
        backbone: the text encoder (frozen here; see ``finetune_backbone`` to adapt it).
        descriptions: component name -> one-line description, rendered into every text.
        config: training hyper-parameters.
        checks: component name -> the gold-free checks it declares (``Component.checks``),
            added to its head's score at the weight the pairs give each (``_checks``).
    """

    def __init__(
        self,
        backbone: Backbone,
        descriptions: Mapping[str, str] | None = None,
        config: TrainConfig | None = None,
        checks: Mapping[str, Sequence[Check]] | None = None,
    ) -> None:
        self.backbone = backbone
        self.descriptions = dict(descriptions or {})
        self.config = config or TrainConfig()
        self.checks = {c: tuple(v) for c, v in (checks or {}).items() if v}
        self.evidence: dict[str, list[Evidence]] = {}  # per check of self.checks[component]
        self.heads: dict[str, ComponentHead] = {}
        self.buffer = ReplayBuffer(self.config.buffer_size, self.config.seed)
        self._rng = random.Random(self.config.seed)
        self._n_features = N_FEATURES if self.config.use_features else 0

    def untrained(self) -> LocalRewardModel:
        """A model with the same backbone, descriptions and settings and no heads (for
        cross-validation: nothing learned from held-out inputs can leak in)."""
        return LocalRewardModel(self.backbone, self.descriptions, self.config, self.checks)

    @property
    def n_features(self) -> int:
        """Width of the cheap feature vector beside the embedding (0 when disabled)."""
        return self._n_features

    # ---- encoding -------------------------------------------------------------------------
    def render_item(
        self, component: str, inputs: Mapping[str, Any], outputs: Mapping[str, Any]
    ) -> str:
        return render(self.descriptions.get(component, component), inputs, outputs)

    def encode(self, component: str, items: Sequence[Item]) -> tuple[torch.Tensor, torch.Tensor]:
        """(embeddings, raw features) of ``items`` as float32 tensors."""
        if self.config.use_embedding:
            texts = [self.render_item(component, x, y) for x, y in items]
            emb = torch.from_numpy(np.ascontiguousarray(self.backbone.embed(texts)))
        else:  # the heads read none of it: no encoder pass
            emb = torch.zeros((len(items), 0))
        if self._n_features:
            feats = torch.from_numpy(np.stack([features(x, y) for x, y in items]))
        else:
            feats = torch.zeros((len(items), 0))
        return emb, feats

    # ---- scoring ---------------------------------------------------------------------------
    def can_score(self, component: str) -> bool:
        return component in self.heads

    def score_batch(self, component: str, items: Sequence[Item]) -> np.ndarray:
        head = self.heads.get(component)
        if head is None:
            raise ConfigError(
                f"no local reward head for component {component!r} (have {sorted(self.heads)}); "
                "fit the reward model on that component's pairs first"
            )
        if not items:
            return np.zeros(0)
        emb, feats = self.encode(component, items)
        with torch.no_grad(), single_thread():
            scores = head(emb, feats).double().numpy()
        return scores + check_scores(self.checks.get(component, ()),
                                     self.check_weights(component), items)

    def check_weights(self, component: str) -> list[float]:
        """The weight of each of ``component``'s checks (all 0 with ``use_checks`` off)."""
        checks = self.checks.get(component, ())
        found = self.evidence.get(component, [])
        if not self.config.use_checks or len(found) != len(checks):
            return [0.0] * len(checks)
        return [e.weight for e in found]

    def _weigh_checks(self, component: str, pairs: list[PreferencePair], *, more: bool) -> None:
        checks = self.checks.get(component, ())
        if not checks or not self.config.use_checks:
            return
        new = [evidence(check, pairs) for check in checks]
        old = self.evidence.get(component) if more else None
        self.evidence[component] = new if old is None else [a.add(b) for a, b in zip(
            old, new, strict=True)]

    # ---- stage 1 ---------------------------------------------------------------------------
    def fit(self, pairs: Sequence[PreferencePair], *, keep: bool = False) -> FitReport:
        """Train one head per component from scratch on ``pairs`` (ties are skipped).
        ``keep``: the other components' heads and replayed pairs stay (a loop paying stage 1
        one component at a time); by default the model starts over."""
        report = FitReport(ties_skipped=sum(p.is_tie for p in pairs))
        groups = _group(pairs)
        if not groups:
            raise DataError("reward model fit got no non-tie preference pairs; collect pairs first")
        if not keep:
            self.buffer = ReplayBuffer(self.config.buffer_size, self.config.seed)
            self._rng = random.Random(self.config.seed)
            self.evidence = {}
        for component, comp_pairs in groups.items():
            self._weigh_checks(component, comp_pairs, more=False)
            data = self._tensors(component, comp_pairs, report)
            head = make_head(
                self.backbone.dim, self._n_features, self.config, self._seed(component)
            )
            head.set_feature_stats(data[1])
            self.heads[component] = head
            self._train(component, head, data, report, stage=1)
            self.buffer.add(comp_pairs)
        return report

    # ---- stage 2 ---------------------------------------------------------------------------
    def adapt(self, pairs: Sequence[PreferencePair]) -> FitReport:
        """Refine heads on the pairs of ≤ ``fresh_inputs`` fresh inputs plus replayed pairs.

        A component without a head gets a new one trained on what is available.
        """
        report = FitReport(ties_skipped=sum(p.is_tie for p in pairs))
        for component, comp_pairs in _group(pairs).items():
            fresh = self._limit_inputs(comp_pairs)
            k = int(round(self.config.replay_ratio * len(fresh)))
            replay = self.buffer.sample(component, k)
            report.replayed[component] = len(replay)
            self._weigh_checks(component, fresh, more=True)
            data = self._tensors(component, fresh + replay, report)
            head = self.heads.get(component)
            if head is None:
                head = make_head(
                    self.backbone.dim, self._n_features, self.config, self._seed(component)
                )
                head.set_feature_stats(data[1])
                self.heads[component] = head
            self._train(component, head, data, report, stage=2)
            self.buffer.add(fresh)
        return report

    # ---- helpers ---------------------------------------------------------------------------
    def _seed(self, component: str) -> int:
        digest = hashlib.sha256(f"{self.config.seed}:{component}".encode()).hexdigest()
        return int(digest[:8], 16)

    def _limit_inputs(self, pairs: list[PreferencePair]) -> list[PreferencePair]:
        ids = list(dict.fromkeys(p.example_id for p in pairs))
        if len(ids) <= self.config.fresh_inputs:
            return pairs
        keep = set(self._rng.sample(ids, self.config.fresh_inputs))
        return [p for p in pairs if p.example_id in keep]

    def _tensors(
        self, component: str, pairs: list[PreferencePair], report: FitReport
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Distinct items' (emb, feats), chosen/rejected index vectors and each item's fixed
        offset in training (its checks' part of the score; zeros without residual heads)."""
        start = time.perf_counter()
        index: dict[str, int] = {}
        items: list[Item] = []
        chosen, rejected = [], []
        for pair in pairs:
            for outputs, sink in ((pair.chosen, chosen), (pair.rejected, rejected)):
                key = canonical_json([dict(pair.inputs), dict(outputs)])
                if key not in index:
                    index[key] = len(items)
                    items.append((pair.inputs, outputs))
                sink.append(index[key])
        emb, feats = self.encode(component, items)
        offset = torch.zeros(len(items))
        if self.config.residual_heads:
            offset = torch.from_numpy(check_scores(self.checks.get(component, ()),
                                                   self.check_weights(component), items))
        report.embed_s += time.perf_counter() - start
        report.pairs[component] = report.pairs.get(component, 0) + len(pairs)
        return emb, feats, torch.tensor(chosen), torch.tensor(rejected), offset

    def _epochs(self, n_pairs: int) -> int:
        """Stage-1 epochs: ``epochs``, raised so that small pair sets still get ``min_steps``."""
        batches = max(1, math.ceil(n_pairs / self.config.batch_size))
        return max(self.config.epochs, math.ceil(self.config.min_steps / batches))

    def _train(
        self,
        component: str,
        head: ComponentHead,
        data: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
        report: FitReport,
        stage: int,
    ) -> None:
        cfg = self.config
        start = time.perf_counter()
        report.final_loss[component] = train_head(
            head,
            *data[:4],
            offset=data[4],
            epochs=self._epochs(len(data[2])) if stage == 1 else cfg.adapt_epochs,
            lr=cfg.lr if stage == 1 else cfg.adapt_lr,
            weight_decay=cfg.weight_decay,
            batch_size=cfg.batch_size,
            max_steps=cfg.max_steps,
            seed=self._seed(component) + stage,
        )
        report.train_s += time.perf_counter() - start


def _group(pairs: Sequence[PreferencePair]) -> dict[str, list[PreferencePair]]:
    groups: dict[str, list[PreferencePair]] = {}
    for pair in pairs:
        if not isinstance(pair, PreferencePair):
            raise DataError(
                f"reward model expects PreferencePair records, got {type(pair).__name__}"
            )
        if not pair.is_tie:
            groups.setdefault(pair.component, []).append(pair)
    return groups
