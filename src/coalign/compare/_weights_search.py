"""Global baselines that search a decider's weights as well as the table's configs.

On a table whose system ends in a trainable decider (``next_item``: ``ItemDecider``, a linear
scorer over six features of each candidate), the loop trains the decider's ``Weights`` while
the table's baselines pick among prompt configs only. These give the baselines the same knob:
an Optuna sampler (TPE, or CMA-ES) over the tabled slots and the scorer's six feature weights
(``score_i = w · f_i``, the form the untrained ``ChoiceScorer`` takes), judged on validation.

Each config's decider features are read once per table from the replayed traces (no LLM
call), so a weights trial is a matrix product. The budget is charged as the loop's ledger
charges its own runs (equal shares per component execution): |val| runs the first time a
config is evaluated, and |val| decider executions (|val| / the number of components runs) for
another weight vector on outputs already computed, as the loop's decider-only validations
cost; ``trials`` bounds the search. A trial that beats every earlier one on validation enters
the lookup as a system of its own (``Lookup.add``), scored on the split's test questions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from coalign.compare._decider_grid import DeciderGrid, decider_grid, deciders_of
from coalign.compare._lookup import Lookup, Split, Trajectory
from coalign.errors import ConfigError

TPE_WEIGHTS, CMAES_WEIGHTS = "optuna tpe (+ decider weights)", "cma-es (+ decider weights)"
CMAES_WEIGHTS_ONLY = "cma-es (decider weights, start config)"
WEIGHT_RANGE = 3.0  # each weight in [-3, 3]: features are cosines in [-1, 1] and a 0/1 flag


def weights_methods(table: Path) -> dict[str, tuple[WeightsSearch, bool]]:
    """The weights-searching baselines for the table in ``table`` (none without a decider)."""
    from coalign.tables import CandidateSpace

    if len(deciders_of(CandidateSpace.load(Path(table)).task())) != 1:
        return {}
    from coalign.compare._weights_reinforce import REINFORCE_WEIGHTS, WeightsReinforce

    return {TPE_WEIGHTS: (WeightsSearch(Path(table), "tpe"), True),
            CMAES_WEIGHTS: (WeightsSearch(Path(table), "cmaes"), True),
            CMAES_WEIGHTS_ONLY: (WeightsSearch(Path(table), "cmaes", slots=False), True),
            REINFORCE_WEIGHTS: (WeightsReinforce(Path(table)), True)}


@dataclass(frozen=True)
class WeightsSearch:
    """A comparison method (``coalign.compare.Method``): an Optuna ``sampler`` ("tpe" or
    "cmaes") over the table's slots and the decider's weights, at most ``trials`` trials.
    ``slots=False`` (CMA-ES only): the weights alone, from the untrained scorer's (as the
    loop's weights arm starts), the table's slots kept at the start config, so every trial
    after the first costs decider executions only."""

    table: Path
    sampler: str = "tpe"
    trials: int = 300
    slots: bool = True

    @property
    def name(self) -> str:
        if self.sampler == "tpe":
            return TPE_WEIGHTS
        return CMAES_WEIGHTS if self.slots else CMAES_WEIGHTS_ONLY

    def __call__(self, lookup: Lookup, split: Split, budget: float, seed: int) -> Trajectory:
        grid = decider_grid(str(self.table))
        trajectory = Trajectory(self.name)
        start = [int(i) for i in lookup.index[0]]
        search = (_Joint(lookup, grid, start, self._sampler(seed)) if self.slots
                  else _WeightsOnly(grid, start, seed))
        seen: set[int] = set()
        spent, best = 0.0, float("-inf")
        for _ in range(self.trials):
            picks, weights = search.ask()
            config = lookup.config(picks)
            cost = len(split.val) * (grid.share if config in seen else 1.0)
            if spent + cost > budget:
                break
            seen.add(config)
            spent += cost
            val = float(grid.scores(config, weights, list(split.val)).mean())
            search.tell(val)
            if val > best:
                best = val
                trajectory.trials.append((spent, grid.system(lookup, config, weights, split.test),
                                          val))
        return trajectory

    def _sampler(self, seed: int) -> Any:
        import optuna

        if self.sampler == "tpe":
            return optuna.samplers.TPESampler(seed=seed, n_startup_trials=10)
        if self.sampler == "cmaes":
            # the slots are categorical: CMA-ES moves the weights, a random sampler the slots
            return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
        raise ConfigError(f"weights search: sampler must be 'tpe' or 'cmaes', got "
                          f"{self.sampler!r}")


class _Joint:
    """An Optuna study over the slots and the weights; its first trial is the start config
    with the untrained scorer."""

    def __init__(self, lookup: Lookup, grid: DeciderGrid, start: list[int], sampler: Any
                 ) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.lookup, self.dim = lookup, len(grid.start)
        self.study = optuna.create_study(direction="maximize", sampler=sampler)
        self.study.enqueue_trial({**dict(zip(lookup.slots, start, strict=True)),
                                  **{f"w{k}": float(w) for k, w in enumerate(grid.start)}})
        self.trial: Any = None

    def ask(self) -> tuple[list[int], np.ndarray]:
        self.trial = self.study.ask()
        picks = [self.trial.suggest_categorical(s, list(range(n)))
                 for s, n in zip(self.lookup.slots, self.lookup.sizes, strict=True)]
        return picks, np.array([self.trial.suggest_float(f"w{k}", -WEIGHT_RANGE, WEIGHT_RANGE)
                                for k in range(self.dim)])

    def tell(self, val: float) -> None:
        self.study.tell(self.trial, val)


class _WeightsOnly:
    """CMA-ES (the ``cmaes`` package) on the weights from the untrained scorer's, step size
    1 in the box, the slots at the start config; the first trial is the start itself."""

    def __init__(self, grid: DeciderGrid, start: list[int], seed: int) -> None:
        from cmaes import CMA

        box = np.tile([-WEIGHT_RANGE, WEIGHT_RANGE], (len(grid.start), 1))
        self.cma = CMA(mean=grid.start.astype(float), sigma=1.0, bounds=box, seed=seed)
        self.start, self.first = start, grid.start
        self.asked: np.ndarray | None = None
        self.told: list[tuple[np.ndarray, float]] = []

    def ask(self) -> tuple[list[int], np.ndarray]:
        if self.first is not None:
            return self.start, self.first
        self.asked = self.cma.ask()
        return self.start, self.asked

    def tell(self, val: float) -> None:
        if self.first is not None:
            self.first = None
            return
        assert self.asked is not None
        self.told.append((self.asked, -val))  # CMA-ES minimises
        if len(self.told) == self.cma.population_size:
            self.cma.tell(self.told)
            self.told = []
