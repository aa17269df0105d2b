"""How well a local reward ranks pairs it was not trained on, cross-validated by input."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coalign.pairs import PreferencePair
from coalign.rewards import LocalRewardModel, pairwise_accuracy


def cross_validated_alignment(reward: LocalRewardModel, pairs: Sequence[PreferencePair],
                              max_folds: int = 5) -> dict[str, dict[str, Any]]:
    """Pairwise accuracy per component: each fold of inputs is held out once from a fresh LRF
    fitted on the others, so every decisive pair is tested once. Pairs of one input never sit
    on both sides (they share the input, and often an output). ``{}`` with under 2 inputs."""
    ids = sorted({p.example_id for p in pairs})
    folds = min(max_folds, len(ids))
    counts: dict[str, list[float]] = {}
    for f in range(folds if folds >= 2 else 0):
        held = set(ids[f::folds])
        fit = [p for p in pairs if p.example_id not in held]
        if not any(not p.is_tie for p in fit):
            continue
        model = reward.untrained()
        model.fit(fit)
        test = [p for p in pairs if p.example_id in held and not p.is_tie
                and model.can_score(p.component)]
        if test:
            for comp, (correct, total) in pairwise_accuracy(model, test).counts.items():
                acc = counts.setdefault(comp, [0.0, 0])
                acc[0], acc[1] = acc[0] + correct, acc[1] + total
    return {c: {"pairs": int(n), "accuracy": correct / n} for c, (correct, n) in counts.items()}
