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
    on both sides (they share the input, and often an output). ``{}`` with under 2 inputs.

    ``accuracy`` pools the pairs; ``input_accuracy`` averages the inputs' own accuracies, so an
    input with eleven pairs counts once: the steadier figure when a few inputs hold most pairs."""
    ids = sorted({p.example_id for p in pairs})
    folds = min(max_folds, len(ids))
    counts: dict[str, dict[str, tuple[float, int]]] = {}  # component -> input -> counts
    for f in range(folds if folds >= 2 else 0):
        held = set(ids[f::folds])
        fit = [p for p in pairs if p.example_id not in held]
        if not any(not p.is_tie for p in fit):
            continue
        model = reward.untrained()
        model.fit(fit)
        test = [p for p in pairs if p.example_id in held and not p.is_tie
                and model.can_score(p.component)]
        if test:  # folds hold disjoint inputs: each input's counts come from one fold
            for comp, inputs in pairwise_accuracy(model, test).by_input.items():
                counts.setdefault(comp, {}).update(inputs)
    return {c: summary(inputs) for c, inputs in counts.items()}


def summary(inputs: dict[str, tuple[float, int]]) -> dict[str, Any]:
    correct, pairs = sum(c for c, _ in inputs.values()), sum(n for _, n in inputs.values())
    return {"pairs": pairs, "accuracy": correct / pairs, "inputs": len(inputs),
            "input_accuracy": sum(c / n for c, n in inputs.values()) / len(inputs)}
