"""Reward-to-go advantages with a position-bucketed baseline.

Each step falls in a bucket by its role and position: ``search_1``, ``search_2``, ...,
``terminal`` (the answer step, wherever it occurs). The baseline of a step is the mean
reward-to-go of its bucket in the batch, so advantages have zero mean inside every bucket.

Fallback: a bucket with fewer than ``min_count`` entries (default 2) would give its lone step an
advantage of exactly 0 and waste it; such a bucket instead uses the mean reward-to-go of the
whole batch (every step of every bucket), and a batch of a single step uses a baseline of 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

__all__ = ["bucketed_advantages", "outcome_step_rewards", "position_bucket", "reward_to_go"]


def position_bucket(position: int, kind: str) -> str:
    """``terminal`` for an answer step, else ``search_<1-based position>``."""
    return "terminal" if kind == "answer" else f"search_{position + 1}"


def reward_to_go(step_rewards: Sequence[float], gamma: float = 1.0) -> list[float]:
    """G_t = sum over t' >= t of gamma^(t'-t) * r_t'."""
    out, running = [0.0] * len(step_rewards), 0.0
    for t in range(len(step_rewards) - 1, -1, -1):
        running = step_rewards[t] + gamma * running
        out[t] = running
    return out


def outcome_step_rewards(n_steps: int, outcome: float) -> list[float]:
    """Outcome-only rewards: 0 everywhere but the terminal R (so every G_t equals R)."""
    return [0.0] * (n_steps - 1) + [outcome] if n_steps else []


def bucketed_advantages(
    returns: Sequence[float], buckets: Sequence[str], min_count: int = 2
) -> tuple[list[float], dict[str, float]]:
    """Advantages ``G - baseline[bucket]`` and the baseline used for each bucket.

    Args:
        returns: reward-to-go of every step in the batch (flattened over trajectories).
        buckets: the position bucket of each step (same length).
        min_count: buckets with fewer entries fall back to the batch-wide mean (see module doc).
    """
    if len(returns) != len(buckets):
        raise ValueError(f"{len(returns)} returns but {len(buckets)} buckets")
    if not returns:
        return [], {}
    groups: dict[str, list[float]] = defaultdict(list)
    for g, b in zip(returns, buckets, strict=True):
        groups[b].append(g)
    overall = sum(returns) / len(returns) if len(returns) > 1 else 0.0
    baseline = {
        b: (sum(v) / len(v) if len(v) >= min_count else overall) for b, v in groups.items()
    }
    return [g - baseline[b] for g, b in zip(returns, buckets, strict=True)], baseline
