"""How sure a report figure is: a paired bootstrap interval of a score change (the gate's and
the CLI's ``paired_bootstrap``, on stored traces) and a Wilson interval of an agreement rate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from coalign.stats import paired_bootstrap
from coalign.trace import Trace


class Interval(NamedTuple):
    """Mean paired difference (new - old) and its 95% bootstrap interval."""

    mean: float
    lo: float
    hi: float


def paired(new: Sequence[Trace], old: Sequence[Trace], seed: int = 0) -> Interval | None:
    """``new`` against ``old`` on the examples both scored, in ``old``'s order (the order the
    loop and the test evaluation stored them in, so the resampling matches theirs); None when
    they share no example."""
    by_id = {t.example_id: t.reward or 0.0 for t in new}
    both = [(by_id[t.example_id], t.reward or 0.0) for t in old if t.example_id in by_id]
    if not both:
        return None
    mean, lo, hi, _ = paired_bootstrap([n for n, _ in both], [o for _, o in both], seed=seed)
    return Interval(mean, lo, hi)
