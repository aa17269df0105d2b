"""What a loop run is told: its budget, gate, proposer, targets and cost trade-offs, and which
train inputs each step uses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from coalign.optimize._gate import Gate


@dataclass
class LoopSettings:
    iterations: int = 10
    search_size: int = 10
    fresh_inputs: int = 20
    rollout_n: int = 3
    text_candidates: int = 3  # candidates per local step (the reference's 3 x 3)
    text_steps: int = 3
    text_alternatives: int = 0  # stage-1 rollouts also under this many edited instructions
    temperature: float = 1.0
    tau: float = 1.0
    gate: Gate = field(default_factory=Gate)
    proposer: str | None = None
    components: Sequence[str] | None = None  # default: every component with params
    # per-instance choices: relative cost per option, traded against the local reward
    choice_costs: Mapping[tuple[str, str], Mapping[Any, float]] = field(default_factory=dict)
    cost_weight: float = 0.0
    # components whose stage-1 alignment (cross-validated) is not above this are not drawn,
    # once it was measured on at least min_alignment_pairs decisive pairs (fewer say nothing)
    min_alignment: float = 0.5
    min_alignment_pairs: int = 10
    seed: int = 0


T = TypeVar("T")


def window(items: Sequence[T], t: int, size: int) -> list[T]:
    """Step ``t``'s ``size`` items (the search sample, the fresh adaptation inputs): consecutive
    steps take consecutive windows of ``items``, wrapping around."""
    n = min(size, len(items))
    start = (t * n) % len(items) if items else 0
    return [items[(start + i) % len(items)] for i in range(n)]
