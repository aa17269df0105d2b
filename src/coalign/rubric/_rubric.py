"""The rubric model mu: writes K criteria for a step, scores the step under them.

Generation head: given the step context (trajectory prefix h_t, action a_t and its result), it
decodes K criteria greedily, each ended by ``<eoc>``. Score head: from the same context followed
by the criteria, a tanh score per criterion read at its ``<eoc>``; their mean is the step reward
s_t. Modes: ``adaptive`` (generated criteria), ``fixed`` (dataset-level criteria, the same for
every step) and ``none`` (no criteria text: a scalar process reward).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from coalign.errors import ConfigError
from coalign.rubric._criteria import FIXED_CRITERIA, MAX_K
from coalign.rubric._env import Trajectory
from coalign.rubric._model import ArcoModel, last_hidden, pad_batch
from coalign.rubric._text import SPECIALS, StepEncoder

__all__ = ["RubricModel", "RubricOutput", "RubricSpec", "StepContext", "StepRubric"]


@dataclass(frozen=True)
class RubricSpec:
    """Which rubric model variant: K criteria, how they are obtained, prefix or not."""

    k: int = 3
    mode: str = "adaptive"  # adaptive | fixed | none
    use_prefix: bool = True

    def __post_init__(self) -> None:
        if self.mode not in {"adaptive", "fixed", "none"}:
            raise ConfigError(f"mode must be adaptive, fixed or none (got {self.mode!r})")
        if not 1 <= self.k <= MAX_K:
            raise ConfigError(f"k must be in 1..{MAX_K} (got {self.k})")

    @property
    def n_dims(self) -> int:
        return 1 if self.mode == "none" else self.k


@dataclass(frozen=True)
class StepContext:
    """Where a step sits (trajectory index, position) and its encoded context."""

    traj: int
    position: int
    ids: tuple[int, ...]


@dataclass(frozen=True)
class StepRubric:
    """What mu says about one step: criteria texts, per-criterion scores, and s_t."""

    criteria: tuple[str, ...]
    dims: tuple[float, ...]
    score: float


@dataclass
class RubricOutput:
    """Forward results: dimension scores (n, K) and generation logits/targets over criteria."""

    dims: torch.Tensor
    lm_logits: torch.Tensor  # (n_positions, vocab)
    lm_targets: torch.Tensor  # (n_positions,)

    @property
    def scores(self) -> torch.Tensor:
        return self.dims.mean(-1)


class RubricModel:
    """mu on the shared backbone (``model``), configured by ``spec``."""

    def __init__(self, model: ArcoModel, encoder: StepEncoder, spec: RubricSpec) -> None:
        self.model = model
        self.encoder = encoder
        self.spec = spec
        self.eoc = encoder.vocab.id("<eoc>")
        self._fixed = [encoder.criterion(t) for t in FIXED_CRITERIA[: spec.k]]

    def contexts(self, trajs: Sequence[Trajectory]) -> list[StepContext]:
        out = []
        for i, traj in enumerate(trajs):
            steps = [(s.action.kind, s.action.text, s.observation) for s in traj.steps]
            for t in range(len(steps)):
                ids = self.encoder.rubric_context(traj.question, steps[: t + 1],
                                                  self.spec.use_prefix)
                out.append(StepContext(i, t, tuple(ids)))
        return out

    def criteria(self, contexts: Sequence[StepContext]) -> list[list[list[int]]]:
        """Criteria token ids per step, as the variant obtains them."""
        if self.spec.mode == "none":
            return [[[]] for _ in contexts]
        if self.spec.mode == "fixed":
            return [[list(c) for c in self._fixed] for _ in contexts]
        return self.generate([list(c.ids) for c in contexts])

    @torch.no_grad()
    def generate(self, contexts: Sequence[list[int]], model: ArcoModel | None = None
                 ) -> list[list[list[int]]]:
        """Greedy decoding of K criteria per context, reusing the context's key/value cache."""
        model = model or self.model
        k, limit = self.spec.k, self.encoder.criterion_tokens
        ids, lens = pad_batch(list(contexts))
        hidden, cache = model(ids)
        valid = torch.arange(ids.shape[1]).unsqueeze(0) < lens.unsqueeze(1)
        ctx = (hidden, ids, valid)  # what the copy head may point at
        last, pos = last_hidden(hidden, lens), lens.clone()
        banned = torch.tensor([self.encoder.vocab.id(s) for s in SPECIALS if s != "<eoc>"])
        n = len(contexts)
        out: list[list[list[int]]] = [[[] for _ in range(k)] for _ in range(n)]
        crit, ntok = [0] * n, [0] * n
        for _ in range(k * (limit + 1)):
            logits = model.lm_logits(last, *ctx)
            logits[:, banned] = float("-inf")
            nxt = logits.argmax(-1)
            for i in range(n):
                if crit[i] >= k:
                    continue
                tok = self.eoc if ntok[i] >= limit else int(nxt[i])
                nxt[i] = tok
                if tok == self.eoc:
                    crit[i], ntok[i] = crit[i] + 1, 0
                else:
                    out[i][crit[i]].append(tok)
                    ntok[i] += 1
            if min(crit) >= k:
                break
            hidden, cache = model(nxt.unsqueeze(1), cache, valid, pos)
            valid = torch.cat([valid, torch.ones(n, 1, dtype=torch.bool)], dim=1)
            last, pos = hidden[:, 0], pos + 1
        return out

    def forward(
        self, contexts: Sequence[StepContext], criteria: Sequence[Sequence[Sequence[int]]],
        model: ArcoModel | None = None,
    ) -> RubricOutput:
        """Scores (and generation logits) of each context under the given criteria."""
        model = model or self.model
        seqs, eoc_rows, eoc_cols, lm_rows, lm_cols, targets = [], [], [], [], [], []
        for row, (ctx, crits) in enumerate(zip(contexts, criteria, strict=True)):
            seq = list(ctx.ids)
            for c in crits:
                seq += [*c, self.eoc]
                eoc_rows.append(row)
                eoc_cols.append(len(seq) - 1)
            if self.spec.mode == "adaptive":
                for j in range(len(ctx.ids), len(seq)):
                    lm_rows.append(row)
                    lm_cols.append(j - 1)
                    targets.append(seq[j])
            seqs.append(seq)
        ids, _ = pad_batch(seqs)
        hidden, _ = model(ids)
        dims = model.score(hidden[torch.tensor(eoc_rows), torch.tensor(eoc_cols)])
        dims = dims.view(len(seqs), self.spec.n_dims)
        if lm_rows:
            rows = torch.tensor(lm_rows)
            ctx_lens = torch.tensor([len(c.ids) for c in contexts])
            width = int(ctx_lens.max())
            ctx_valid = torch.arange(width).unsqueeze(0) < ctx_lens.unsqueeze(1)
            lm = model.lm_logits(hidden[rows, torch.tensor(lm_cols)], hidden[rows, :width],
                                 ids[rows, :width], ctx_valid[rows])
        else:
            lm = torch.zeros(0, model.config.vocab_size)
        return RubricOutput(dims, lm, torch.tensor(targets, dtype=torch.long))

    @torch.no_grad()
    def annotate(self, trajs: Sequence[Trajectory]) -> list[list[StepRubric]]:
        """Criteria, dimension scores and s_t for every step of every trajectory."""
        contexts = self.contexts(trajs)
        crits = self.criteria(contexts)
        dims = self.forward(contexts, crits).dims
        out: list[list[StepRubric]] = [[] for _ in trajs]
        vocab = self.encoder.vocab
        for ctx, cs, d in zip(contexts, crits, dims, strict=True):
            texts = tuple(vocab.decode(c) for c in cs) if self.spec.mode != "none" else ()
            out[ctx.traj].append(StepRubric(texts, tuple(d.tolist()), float(d.mean())))
        return out
