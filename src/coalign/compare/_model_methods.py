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
from coalign.search import compute_pareto_front

__all__ = ["MODEL_METHODS", "FrontPoint", "always_cheapest", "always_strongest", "front",
           "llm_selector", "model_slots", "nsga2"]


def model_slots(lookup: Lookup) -> list[int]:
    """Indices of the slots that choose a component's model."""
    return [i for i, s in enumerate(lookup.slots) if s.endswith(".model")]


def _by_cost(lookup: Lookup, slot: int) -> list[int]:
    """The options of ``slot``, cheapest first (mean cost of the configs taking each)."""
    means = [float(lookup.costs[lookup.index[:, slot] == o].mean())
             for o in range(lookup.sizes[slot])]
    return sorted(range(lookup.sizes[slot]), key=lambda o: (means[o], o))


def _fixed(lookup: Lookup, split: Split, budget: float, rank: int, name: str) -> Trajectory:
    ev = Evaluator(lookup, split, name)
    picks = [int(i) for i in lookup.index[0]]
    for slot in model_slots(lookup):
        picks[slot] = _by_cost(lookup, slot)[rank]
    for config in (0, lookup.config(picks)):
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

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ev = Evaluator(lookup, split, "optuna nsga-ii (quality, cost)")
    sampler = optuna.samplers.NSGAIISampler(population_size=population, seed=seed)
    study = optuna.create_study(directions=["maximize", "minimize"], sampler=sampler)
    study.enqueue_trial({s: int(i) for s, i in zip(lookup.slots, lookup.index[0], strict=True)})
    repeats = 0
    while repeats < patience and len(ev.seen) < lookup.n_configs:
        trial = study.ask()
        picks = [trial.suggest_categorical(s, list(range(n)))
                 for s, n in zip(lookup.slots, lookup.sizes, strict=True)]
        config = lookup.config(picks)
        if not ev.affordable(budget, config):
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            break
        repeats = repeats + 1 if config in ev.seen else 0
        study.tell(trial, [ev(config), lookup.cost(config, split.val)])
    return ev.trajectory


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
