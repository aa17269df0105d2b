"""Global-config optimizers on a replay table's reward matrix (``Lookup``): random search,
Optuna's TPE, global-reward REINFORCE, and exhaustive search over validation. Each returns a
``Trajectory`` of the configs it evaluated, in order, with the cost spent when each result was
known.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from coalign.compare._lookup import Evaluator, Lookup, Split, Trajectory

__all__ = ["exhaustive", "optuna_search", "random_search", "reinforce", "tpe"]


def random_search(lookup: Lookup, split: Split, budget: float, seed: int) -> Trajectory:
    """The start config, then distinct configs drawn uniformly, until the budget is spent."""
    ev = Evaluator(lookup, split, "random search")
    order = [0] + random.Random(f"random:{seed}").sample(range(1, lookup.n_configs),
                                                         lookup.n_configs - 1)
    for config in order:
        if not ev.affordable(budget):
            break
        ev(config)
    return ev.trajectory


def exhaustive(lookup: Lookup, split: Split) -> Trajectory:
    """Every config on validation (the cost says whether a budget could afford it)."""
    ev = Evaluator(lookup, split, "exhaustive on validation")
    for config in range(lookup.n_configs):
        ev(config)
    return ev.trajectory


def tpe(lookup: Lookup, split: Split, budget: float, seed: int, *,
        patience: int = 30) -> Trajectory:
    """Optuna's TPE over the slots as categorical params (the search inside DSPy's MIPROv2),
    started from the start config. A config TPE proposes again is answered free. Under a cost
    cap it uses Optuna's constraint handling (cost - cap <= 0 is feasible)."""
    import optuna

    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=5)
    return optuna_search(lookup, split, budget, "optuna tpe", sampler, ["maximize"],
                         lambda config, score: score, patience=patience, constrained=True)


def optuna_search(lookup: Lookup, split: Split, budget: float, name: str, sampler: Any,
                  directions: list[str], objective: Callable[[int, float], Any], *,
                  patience: int = 30, constrained: bool = False) -> Trajectory:
    """An Optuna sampler over the slots as categoricals, from the start config: each trial's
    config is validated (a repeat is free) and told ``objective(config, val score)``;
    ``constrained`` with a cap: its cost over the cap is the trial's constraint."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ev = Evaluator(lookup, split, name)
    study = optuna.create_study(directions=directions, sampler=sampler)
    study.enqueue_trial({s: int(i) for s, i in zip(lookup.slots, lookup.index[0], strict=True)})
    # A repeat is free, so a converged sampler would propose the same config forever: stop after
    # ``patience`` repeats in a row, or once every config is known.
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
        if constrained and lookup.cap is not None:
            trial.set_constraint("cost", lookup.cost(config, split.val) - lookup.cap)
        study.tell(trial, objective(config, ev(config)))
    return ev.trajectory


def reinforce(lookup: Lookup, split: Split, budget: float, seed: int, *, batch_size: int = 4,
              lr: float = 0.2) -> Trajectory:
    """Global-reward REINFORCE over the slots (``optimize.reinforce_search`` on lookups): one
    sampled config per minibatch of train questions, then the policy's mode and the start
    config validated with what is left of the budget."""
    from coalign.optimize import Categorical as _Categorical
    from coalign.optimize import RunningBaseline

    rng = random.Random(f"reinforce:{seed}")
    # the live baseline's softmax policy per slot, over candidate indices
    policy = [_Categorical("", slot, list(range(n)), np.zeros(n))
              for slot, n in zip(lookup.slots, lookup.sizes, strict=True)]
    baseline = RunningBaseline()
    ev = Evaluator(lookup, split, "reinforce (global reward)")
    n = min(batch_size, len(split.train))
    queue: list[int] = []
    while ev.spent + n + 2 * len(split.val) <= budget:
        if len(queue) < n:
            queue += rng.sample(split.train, len(split.train))
        batch, queue = queue[:n], queue[n:]
        picks = [cat.sample(rng) for cat in policy]
        ev.spent += n
        reward = lookup.score(lookup.config(picks), batch)
        advantage = float(baseline.advantages([reward])[0])
        for cat, i in zip(policy, picks, strict=True):
            cat.update(i, advantage, lr)
    mode = lookup.config([int(np.argmax(cat.logits)) for cat in policy])
    for config in (mode, 0):
        if ev.affordable(budget, config):
            ev(config)
    return ev.trajectory
