"""The two intervals coalign reports: a paired bootstrap of a score change (the gate, the CLI,
the report, the comparison harness) and a Wilson interval of a rate (alignment on held-out
pairs). Plain Python, so a report or a comparison loads no torch for them."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

__all__ = ["Z95", "paired_bootstrap", "wilson"]

Z95 = 1.959964  # the normal quantile of a two-sided 95% interval


def paired_bootstrap(new: Sequence[float], old: Sequence[float], *, samples: int = 2000,
                     seed: int = 0) -> tuple[float, float, float, float]:
    """Mean paired difference (new - old), its 95% bootstrap interval, and P(diff > 0)."""
    if len(new) != len(old) or not new:
        raise ValueError("paired bootstrap needs two equally long, non-empty score lists")
    diffs = [a - b for a, b in zip(new, old, strict=True)]
    n = len(diffs)
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    lo, hi = means[int(0.025 * samples)], means[min(samples - 1, int(0.975 * samples))]
    return sum(diffs) / n, lo, hi, sum(m > 0 for m in means) / samples


def wilson(rate: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a rate measured on ``n`` trials: unlike rate ± z·se it stays
    inside [0, 1] and is not zero-width at 0 or 1 (3 of 3 agreeing pairs: [0.44, 1])."""
    if n <= 0:
        return 0.0, 1.0
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)
