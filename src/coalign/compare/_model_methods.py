"""Baselines that fit model choice: a fixed model everywhere, LLMSelector-style greedy model
assignment per component, and Optuna's NSGA-II for the quality-vs-cost front; and the front a
method's evaluated configs trace.

Model slots are a space's params named ``<component>.model``. "Strongest" and "cheapest" are
read off the cost matrix (the option with the highest / lowest mean cost per query), not off
names, so a space may list its models in any order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from coalign.compare._lookup import Evaluator, Lookup, Split, Trajectory
from coalign.compare._methods import optuna_search
from coalign.search import compute_pareto_front

__all__ = ["MODEL_METHODS", "FrontPoint", "always_cheapest", "always_strongest", "front",
           "llm_selector", "model_slots", "nsga2"]


def model_slots(lookup: Lookup) -> list[int]:
    """Indices of the slots that choose a component's model."""
    return lookup.model_slots()


def _fixed(lookup: Lookup, split: Split, budget: float, rank: int, name: str) -> Trajectory:
    ev = Evaluator(lookup, split, name)
    for config in (0, lookup.fixed_models(rank)):
        if ev.affordable(budget, config):
            ev(config)
    return ev.trajectory


def always_strongest(lookup: Lookup, split: Split, budget: float, seed: int) -> Trajectory:
    """Every component on its costliest model, other params at the start."""
    return _fixed(lookup, split, budget, -1, "always the strongest model")


def always_cheapest(lookup: Lookup, split: Split, budget: float, seed: int) -> Trajectory:
    """Every component on its cheapest model, other params at the start."""
    return _fixed(lookup, split, budget, 0, "always the cheapest model")


def llm_selector(lookup: Lookup, split: Split, budget: float, seed: int) -> Trajectory:
    """LLMSelector's greedy allocation with the whole system as judge: component by component
    (in the seed's order), try every model for it with the others held, keep the best on
    validation within the cap; repeat rounds until one changes nothing or the budget ends.
    Prompts and other params stay at the start: it chooses models only."""
    ev = Evaluator(lookup, split, "llmselector (greedy models)")
    current = [int(i) for i in lookup.index[0]]
    best = ev(0) if ev.affordable(budget) else None
    if best is None:
        return ev.trajectory
    order = model_slots(lookup)
    np.random.default_rng(seed).shuffle(order)
    changed = True
    while changed:
        changed = False
        for slot in order:
            keep = current[slot]
            for option in range(lookup.sizes[slot]):
                if option == keep:
                    continue
                picks = [*current[:slot], option, *current[slot + 1:]]
                config = lookup.config(picks)
                if not ev.affordable(budget, config):
                    return ev.trajectory
                score = ev(config)
                if score > best and lookup.feasible(config, split.val):
                    best, current, changed = score, picks, True
    return ev.trajectory


def nsga2(lookup: Lookup, split: Split, budget: float, seed: int, *,
          population: int = 8, patience: int = 30) -> Trajectory:
    """Optuna's NSGA-II on (validation quality up, validation cost per query down) over every
    slot, started from the start config; the front it finds is the evaluated configs'."""
    import optuna

    sampler = optuna.samplers.NSGAIISampler(population_size=population, seed=seed)
    return optuna_search(lookup, split, budget, "optuna nsga-ii (quality, cost)", sampler,
                         ["maximize", "minimize"],
                         lambda config, score: [score, lookup.cost(config, split.val)],
                         patience=patience)


# name -> (method, anytime): added to ``METHODS`` on a space with model slots
MODEL_METHODS = {
    "always the strongest model": (always_strongest, True),
    "always the cheapest model": (always_cheapest, True),
    "llmselector (greedy models)": (llm_selector, True),
    "optuna nsga-ii (quality, cost)": (nsga2, True),
}


@dataclass(frozen=True)
class FrontPoint:
    """A config on a quality-vs-cost front (``quality_score`` / ``cost``: what
    ``coalign.search``'s Pareto functions read)."""

    config: int
    quality_score: float
    cost: float


def front(lookup: Lookup, configs: Sequence[int], questions: Sequence[int]) -> list[FrontPoint]:
    """The non-dominated configs among ``configs`` on ``questions``, cheapest first."""
    points = [FrontPoint(c, lookup.score(c, questions), lookup.cost(c, questions))
              for c in dict.fromkeys(configs)]
    return sorted(compute_pareto_front(points), key=lambda p: (p.cost, -p.quality_score))
