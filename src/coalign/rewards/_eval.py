"""Alignment evaluation: pairwise ranking accuracy on held-out pairs, and data efficiency.

Accuracy counts a non-tie pair as right when the ranker puts the higher-reward output first; an
undecided ranker (equal scores, an unparseable judge answer) earns half a pair, so a ranker that
never decides sits at chance (0.5) rather than at 0 or 1.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from coalign.errors import ConfigError, DataError
from coalign.pairs import PreferencePair
from coalign.rewards._base import PairRanker, RewardModel


@dataclass
class AlignmentResult:
    """Per-component (correct, total) counts; ``mean`` averages the components' accuracies.

    ``by_input`` keeps the same counts per component and input: pairs of one input share it (and
    often an output), so one input with many pairs can carry the pooled figure."""

    counts: dict[str, tuple[float, int]] = field(default_factory=dict)
    by_input: dict[str, dict[str, tuple[float, int]]] = field(default_factory=dict)

    def accuracy(self, component: str) -> float:
        correct, total = self.counts[component]
        return correct / total

    @property
    def per_component(self) -> dict[str, float]:
        return {name: self.accuracy(name) for name in self.counts}

    @property
    def mean(self) -> float:
        accs = list(self.per_component.values())
        return sum(accs) / len(accs) if accs else float("nan")

    @property
    def micro(self) -> float:
        total = sum(t for _, t in self.counts.values())
        return sum(c for c, _ in self.counts.values()) / total if total else float("nan")


def pairwise_accuracy(ranker: PairRanker, pairs: Sequence[PreferencePair]) -> AlignmentResult:
    """How often ``ranker`` orders held-out non-tie ``pairs`` as their rewards do.

    Rankers with ``compare_batch(pairs)`` (every ``BaseRewardModel``) are asked once for all pairs.
    """
    result = AlignmentResult()
    informative = [p for p in pairs if not p.is_tie]
    batch = getattr(ranker, "compare_batch", None)  # reward models score a whole batch at once
    verdicts = batch(informative) if batch else [ranker.compare(p) for p in informative]
    for pair, verdict in zip(informative, verdicts, strict=True):
        truth = 1.0 if pair.label == "a" else -1.0
        credit = 0.5 if verdict == 0 else float(verdict * truth > 0)
        correct, total = result.counts.get(pair.component, (0.0, 0))
        result.counts[pair.component] = (correct + credit, total + 1)
        per_input = result.by_input.setdefault(pair.component, {})
        correct, total = per_input.get(pair.example_id, (0.0, 0))
        per_input[pair.example_id] = (correct + credit, total + 1)
    if not result.counts:
        raise DataError(
            "alignment evaluation got no non-tie pairs; hold out some informative pairs"
        )
    return result


def subsample(
    pairs: Sequence[PreferencePair], fraction: float, seed: int = 0
) -> list[PreferencePair]:
    """A seeded ``fraction`` of each component's non-tie pairs (at least one each).

    Subsamples are nested: for a fixed seed, the 25% set contains the 12.5% set.
    """
    if not 0 < fraction <= 1:
        raise ConfigError(f"fraction must be in (0, 1] (got {fraction})")
    by_comp: dict[str, list[PreferencePair]] = {}
    for pair in pairs:
        if not pair.is_tie:
            by_comp.setdefault(pair.component, []).append(pair)
    out: list[PreferencePair] = []
    for name in sorted(by_comp):
        items = by_comp[name]
        order = list(range(len(items)))
        random.Random(f"{seed}:{name}").shuffle(order)
        keep = max(1, round(fraction * len(items)))
        out.extend(items[i] for i in sorted(order[:keep]))
    return out


def data_efficiency(
    make_model: Callable[[], RewardModel],
    train: Sequence[PreferencePair],
    test: Sequence[PreferencePair],
    fractions: Sequence[float] = (0.125, 0.25, 0.5, 1.0),
    seed: int = 0,
) -> dict[float, float]:
    """Held-out mean accuracy of a fresh model fit on each fraction of ``train``."""
    out: dict[float, float] = {}
    for fraction in fractions:
        model = make_model()
        model.fit(subsample(train, fraction, seed))
        out[fraction] = pairwise_accuracy(model, test).mean
    return out
