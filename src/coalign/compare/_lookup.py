"""A replay table's reward matrix as comparison methods see it: configs by candidate index,
question splits drawn per seed, and the trajectory of configs a method evaluated.

A config's validation score is a lookup instead of a re-run, and the cost is what a live run
would pay: one equivalent full-system run per validation question per config evaluated (the
accounting of ``optimize.random_search``). A config evaluated again costs nothing (a live run's
response cache answers it). The config a method returns at budget B is the best on validation
among those it knew by then (the start config first, so a method never returns something worse
on validation than where it started).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from coalign.data import split
from coalign.errors import ConfigError
from coalign.tables import CandidateSpace, Rewards, config_indices


@dataclass(frozen=True)
class Split:
    """Question indices (into ``Rewards.questions``) of one seed's train / val / test parts."""

    train: tuple[int, ...]
    val: tuple[int, ...]
    test: tuple[int, ...]


def split_sizes(n: int, fractions: Sequence[float]) -> tuple[int, int, int]:
    """Train / val / test sizes for ``n`` questions split by ``fractions`` (each at least 1)."""
    train, val = max(1, round(n * fractions[0])), max(1, round(n * fractions[1]))
    return train, val, max(1, min(n - train - val, round(n * fractions[2])))


def draw_split(n: int, sizes: Sequence[int], seed: int) -> Split:
    """A seeded random train / val / test split of ``n`` questions: the very split a run
    config's ``split`` (same sizes and seed) draws from the same question list."""
    if len(sizes) != 3 or min(sizes) < 1 or sum(sizes) > n:
        raise ConfigError(f"split sizes {list(sizes)} need three parts >= 1 within {n} questions")
    train, val, test = split(list(range(n)), list(sizes), seed=seed)
    return Split(tuple(train), tuple(val), tuple(test))


class Lookup:
    """A reward matrix ``scores[config, question]`` whose configs are also known as one
    candidate index per slot (``index[config, slot]``; config 0 is the start).

    ``costs[config, question]``: model seconds per query (zeros when unknown). ``cap``: the
    objective's cost cap, a mean cost per query a returned config may not exceed on validation
    (None: quality alone); a method that can search under it reads it here.
    """

    def __init__(self, scores: np.ndarray, slots: Sequence[str], sizes: Sequence[int],
                 index: np.ndarray, costs: np.ndarray | None = None,
                 cap: float | None = None) -> None:
        self.scores = np.asarray(scores, dtype=float)
        self.costs = (np.zeros_like(self.scores) if costs is None
                      else np.asarray(costs, dtype=float))
        if self.costs.shape != self.scores.shape:
            raise ValueError(f"costs shape {self.costs.shape} differs from scores "
                             f"{self.scores.shape}")
        self.cap = cap
        self.slots, self.sizes = list(slots), [int(n) for n in sizes]
        self.index = np.asarray(index, dtype=int)
        if self.index.shape != (len(self.scores), len(self.slots)):
            raise ValueError(f"index shape {self.index.shape} does not fit "
                             f"{len(self.scores)} configs x {len(self.slots)} slots")
        self.by_key = {tuple(int(v) for v in row): i for i, row in enumerate(self.index)}
        # systems outside the space's global configs (a per-instance policy), each known on the
        # questions it was run on; numbered after the configs
        self.extra: list[dict[int, float]] = []
        self.extra_costs: list[dict[int, float]] = []

    @classmethod
    def of_table(cls, rewards: Rewards, space: CandidateSpace) -> Lookup:
        slots = list(space.params)
        rows = [config_indices(c.to_json(), space) for c in rewards.configs]
        return cls(rewards.scores, slots, [len(space.params[s]) for s in slots],
                   np.array([[r[s] for s in slots] for r in rows], dtype=int), rewards.costs)

    def with_cap(self, cap: float | None) -> Lookup:
        """The same matrix under another objective (systems added with ``add`` not carried)."""
        return Lookup(self.scores, self.slots, self.sizes, self.index, self.costs, cap)

    def model_slots(self) -> list[int]:
        """Indices of the slots that choose a component's model (``<component>.model``)."""
        return [i for i, s in enumerate(self.slots) if s.endswith(".model")]

    def fixed_models(self, rank: int) -> int:
        """The config whose model slots all take the option of cost rank ``rank`` (0: the
        cheapest, -1: the costliest, by the mean cost of the configs taking it, so a space may
        list its models in any order), the other slots at the start."""
        picks = [int(i) for i in self.index[0]]
        for slot in self.model_slots():
            means = [float(self.costs[self.index[:, slot] == o].mean())
                     for o in range(self.sizes[slot])]
            picks[slot] = sorted(range(self.sizes[slot]), key=lambda o: (means[o], o))[rank]
        return self.config(picks)

    def cap_of(self, fraction: float) -> float:
        """``fraction`` of the mean cost per query of the all-strongest config
        (``fixed_models(-1)``)."""
        return fraction * float(self.costs[self.fixed_models(-1)].mean())

    def cost(self, config: int, questions: Sequence[int]) -> float:
        """Mean cost per query of ``config`` on ``questions``."""
        if config >= self.n_configs:
            known = self.extra_costs[config - self.n_configs]
            return float(np.mean([known.get(q, 0.0) for q in questions]))
        return float(self.costs[config, list(questions)].mean())

    def feasible(self, config: int, questions: Sequence[int]) -> bool:
        """Within the cap on ``questions`` (always, for quality alone)."""
        return self.cap is None or self.cost(config, questions) <= self.cap + 1e-9

    @property
    def n_configs(self) -> int:
        return len(self.scores)

    def config(self, picks: Sequence[int]) -> int:
        """The config whose candidate index for each slot is ``picks``."""
        return self.by_key[tuple(int(p) for p in picks)]

    def score(self, config: int, questions: Sequence[int]) -> float:
        if config >= self.n_configs:
            known = self.extra[config - self.n_configs]
            missing = [q for q in questions if q not in known]
            if missing:
                raise ValueError(f"system {config} was not run on questions {missing[:5]}")
            return float(np.mean([known[q] for q in questions]))
        return float(self.scores[config, list(questions)].mean())

    def add(self, scores: Mapping[int, float], costs: Mapping[int, float] | None = None) -> int:
        """Register a system outside the space by its reward (and cost) per question index;
        returns the number ``score`` knows it by."""
        self.extra.append({int(q): float(r) for q, r in scores.items()})
        self.extra_costs.append({int(q): float(c) for q, c in (costs or {}).items()})
        return self.n_configs + len(self.extra) - 1


def per_input_oracle(lookup: Lookup, config: int, slots: Sequence[str],
                     questions: Sequence[int]) -> float:
    """The best a per-input choice of ``slots`` could do from ``config``: per question, the
    best reward over every combination of those slots' values (the rest as in ``config``)."""
    where = [lookup.slots.index(s) for s in slots]
    base = lookup.index[config]
    rows = [i for i, row in enumerate(lookup.index)
            if all(row[j] == base[j] for j in range(len(base)) if j not in where)]
    return float(lookup.scores[np.ix_(rows, list(questions))].max(axis=0).mean())


@dataclass
class Trajectory:
    """``(cost when known, config, validation score)`` of each evaluated config, in order."""

    method: str
    trials: list[tuple[float, int, float]] = field(default_factory=list)
    # what the run did beyond its trials (the loop arm: runs spent, steps by outcome)
    stats: dict[str, float] = field(default_factory=dict)
    # the trials are the method's own answers as it went (the loop's config after each
    # accepted step): the one returned at a budget is the last, not the best on validation
    latest: bool = False

    def at(self, budget: float, feasible: Callable[[int], bool] | None = None) -> int | None:
        """The config returned at ``budget``: best on validation among those known by then
        (earliest of ties; with ``latest`` the last) and ``feasible`` (within a cost cap);
        None if none was."""
        best: tuple[float, int] | None = None
        for cost, config, score in self.trials:
            if feasible is not None and not feasible(config):
                continue
            if cost <= budget and (best is None or score > best[0] or self.latest):
                best = (score, config)
        return None if best is None else best[1]

    @property
    def cost(self) -> float:
        return self.trials[-1][0] if self.trials else 0.0


# (lookup, split, budget, seed) -> the configs evaluated, in order
Method = Callable[["Lookup", Split, float, int], Trajectory]


class Evaluator:
    """Charges |val| runs for the first evaluation of a config, nothing for a repeat."""

    def __init__(self, lookup: Lookup, split: Split, method: str) -> None:
        self.lookup, self.split = lookup, split
        self.spent = 0.0
        self.seen: dict[int, float] = {}
        self.trajectory = Trajectory(method)

    def affordable(self, budget: float, config: int | None = None) -> bool:
        return config in self.seen or self.spent + len(self.split.val) <= budget

    def __call__(self, config: int) -> float:
        if config not in self.seen:
            self.spent += len(self.split.val)
            self.seen[config] = self.lookup.score(config, self.split.val)
            self.trajectory.trials.append((self.spent, config, self.seen[config]))
        return self.seen[config]


