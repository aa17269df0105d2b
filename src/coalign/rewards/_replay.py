"""Per-component replay buffer of preference pairs (reservoir sampling, bounded, seeded).

Stage-2 adaptation mixes a sample of these older pairs into every update so that a small fresh
batch refines the reward instead of overwriting what stage 1 learned. Reservoir sampling keeps a
uniform sample of every pair ever offered, whatever the stream length, in bounded memory.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from coalign.errors import ConfigError
from coalign.pairs import PreferencePair


class ReplayBuffer:
    """Holds at most ``capacity`` non-tie pairs per component."""

    def __init__(self, capacity: int = 1000, seed: int = 0) -> None:
        if capacity < 1:
            raise ConfigError(f"replay buffer capacity must be >= 1 (got {capacity})")
        self.capacity = capacity
        self._rng = random.Random(seed)
        self._items: dict[str, list[PreferencePair]] = {}
        self._seen: dict[str, int] = {}

    def add(self, pairs: Iterable[PreferencePair]) -> None:
        for pair in pairs:
            if pair.is_tie:
                continue
            items = self._items.setdefault(pair.component, [])
            seen = self._seen.get(pair.component, 0) + 1
            self._seen[pair.component] = seen
            if len(items) < self.capacity:
                items.append(pair)
            else:
                slot = self._rng.randrange(seen)
                if slot < self.capacity:
                    items[slot] = pair

    def sample(self, component: str, k: int) -> list[PreferencePair]:
        """Up to ``k`` distinct pairs of ``component``, drawn without replacement."""
        items = self._items.get(component, [])
        if k >= len(items):
            return list(items)
        return self._rng.sample(items, k)

    def pairs(self, component: str | None = None) -> list[PreferencePair]:
        if component is not None:
            return list(self._items.get(component, []))
        return [p for items in self._items.values() for p in items]

    def seen(self, component: str) -> int:
        return self._seen.get(component, 0)

    def __len__(self) -> int:
        return sum(len(v) for v in self._items.values())
