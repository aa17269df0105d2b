"""The LLM-judge row of ``alignment_table.py``: the table's own model as a pairwise judge.

The judge (``coalign.rewards.LLMJudgeRanker``: the component's description, its input and the
two outputs, after ``k`` labelled train pairs of the same component) is asked about a seeded
sample of held-out decisive pairs, one A/B order per pair, drawn per pair. Its answers are kept
beside the table in ``TABLE/judge/shards`` (content-addressed by request, like the table's own
shards), so the row is recomputed with no LLM call once they are committed; a missing answer is
computed with the local model only under ``live=True`` and recorded at once.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coalign.lm import LMRequest, LMResponse
from coalign.pairs import PreferencePair
from coalign.rewards import LLMJudgeRanker
from coalign.tables import CandidateSpace, RecordingLM, ReplayLM, ShardSet

JUDGE_DIR = "judge"


class _LazyLM:
    """The local model, loaded on the first request the judge's shards cannot answer."""

    def __init__(self, model: str) -> None:
        self.model, self._lm = model, None

    @property
    def name(self) -> str:
        return self.model

    def generate(self, request: LMRequest) -> LMResponse:
        if self._lm is None:
            from coalign.lm import make_lm

            self._lm = make_lm(f"llamacpp:{self.model}")
        return self._lm.generate(request)

    def close(self) -> None:
        if self._lm is not None:
            self._lm.close()


def judge_shards(table_dir: Path, space: CandidateSpace, *, writer: bool) -> ShardSet:
    return ShardSet(table_dir / JUDGE_DIR, f"judge:{space.system}", space.digest, writer=writer)


def sample_pairs(pairs: Sequence[PreferencePair], per_component: int,
                 seed: int) -> list[PreferencePair]:
    """Up to ``per_component`` decisive pairs of each component, seeded; a larger sample
    contains a smaller one, so cached answers carry over."""
    out: list[PreferencePair] = []
    for comp in dict.fromkeys(p.component for p in pairs):
        mine = sorted((p for p in pairs if p.component == comp and not p.is_tie),
                      key=lambda p: p.digest)
        random.Random(f"{seed}:judge:{comp}").shuffle(mine)  # nested: N pairs start N + 1
        out += mine[:per_component]
    return out


def judge_ranker(table_dir: Path, space: CandidateSpace, descriptions: dict[str, str],
                 train: Sequence[PreferencePair], *, live: bool, k: int = 3,
                 seed: int = 0) -> tuple[LLMJudgeRanker, Any]:
    """The judge over the table's cached answers (and the model on a miss, under ``live``);
    also the LM, whose ``calls`` count the new answers and whose shards are sealed by
    ``close_judge``."""
    shards = judge_shards(table_dir, space, writer=live)
    lm: Any = (RecordingLM(shards, _LazyLM(space.model), space.model) if live
               else ReplayLM(shards, space.model, str(table_dir / JUDGE_DIR)))
    return LLMJudgeRanker(lm, descriptions, examples=train, k=k, seed=seed), lm


def close_judge(lm: Any) -> None:
    """Seal the new answers into a shard and free the model."""
    if isinstance(lm, RecordingLM):
        lm.shards.seal()
        lm.shards.close()
    lm.close()
