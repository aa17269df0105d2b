"""The weights-searching baselines on a cut of the real next_item table (replay, MiniLM
features; no LLM call)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from coalign.compare import (
    Lookup,
    WeightsReinforce,
    WeightsSearch,
    decider_grid,
    draw_split,
    weights_methods,
)
from coalign.errors import ConfigError
from coalign.tables import Table, subset_table

TABLES = Path(__file__).resolve().parents[1] / "benchmarks" / "tables"


@pytest.fixture(scope="module")
def cut(tmp_path_factory) -> Path:
    return subset_table(TABLES / "next_item", tmp_path_factory.mktemp("t") / "next_item_24",
                        questions=24).directory


@pytest.fixture(scope="module")
def lookup(cut) -> Lookup:
    table = Table(cut)
    return Lookup.of_table(table.rewards(), table.space)


def test_the_grid_with_the_untrained_weights_is_the_table(cut, lookup) -> None:
    grid = decider_grid(str(cut))
    assert grid.start.tolist() == pytest.approx([1.0, 0.1, 0.0, 0.0, 0.0, 0.0])
    questions = list(range(24))
    for config in range(lookup.n_configs):  # every config, every question, to the digit
        assert grid.scores(config, grid.start, questions).tolist() == \
            lookup.scores[config].tolist()


def test_a_search_pays_each_config_once_and_records_only_new_bests(cut, lookup) -> None:
    split = draw_split(24, (6, 8, 10), seed=3)
    method = WeightsSearch(cut, "tpe", trials=60)
    trajectory = method(lookup, split, 3 * len(split.val), seed=3)
    spent = [cost for cost, _, _ in trajectory.trials]
    vals = [val for _, _, val in trajectory.trials]
    assert spent[0] == len(split.val) and max(spent) <= 3 * len(split.val)
    # |val| runs for a new config, |val| decider executions (a third of a run each: three
    # components) for new weights on a config's known outputs
    assert all(float(c * 3 / len(split.val)).is_integer() for c in spent)
    assert vals == sorted(set(vals))  # each recorded trial beats every earlier one
    # the first trial is the start config with the untrained scorer
    assert vals[0] == pytest.approx(lookup.score(0, split.val))
    # each recorded system is known on the test questions as its weights score them
    last = trajectory.trials[-1][1]
    assert last >= lookup.n_configs
    assert 0.0 <= lookup.score(last, split.test) <= 1.0


def test_no_budget_for_one_validation_returns_nothing(cut, lookup) -> None:
    split = draw_split(24, (6, 8, 10), seed=0)
    assert WeightsSearch(cut, "cmaes", trials=20)(lookup, split, 7, seed=0).trials == []


def test_the_weights_only_search_keeps_the_start_config(cut, lookup) -> None:
    split = draw_split(24, (6, 8, 10), seed=1)
    method = WeightsSearch(cut, "cmaes", trials=40, slots=False)
    budget = len(split.val) * (1 + 20 / 3)  # the start config, then 20 weight vectors
    trajectory = method(lookup, split, budget, seed=1)
    assert trajectory.method == "cma-es (decider weights, start config)"
    spent = [cost for cost, _, _ in trajectory.trials]
    vals = [val for _, _, val in trajectory.trials]
    assert spent[0] == len(split.val) and vals[0] == pytest.approx(lookup.score(0, split.val))
    # every trial after the first pays decider executions only: a third of |val| runs each
    steps = [(c - len(split.val)) * 3 / len(split.val) for c in spent]
    assert all(abs(k - round(k)) < 1e-9 for k in steps)
    assert len(vals) > 1 and vals == sorted(set(vals))
    grid = decider_grid(str(cut))
    for _, system, val in trajectory.trials[1:]:  # the start config's outputs, new weights
        assert system >= lookup.n_configs and 0.0 <= val <= 1.0
    assert max(grid.scores(0, grid.start, list(split.val)).mean(), 0.0) <= vals[-1]


def test_reinforce_on_the_weights_pays_its_draws_and_climbs_on_validation(cut, lookup) -> None:
    split = draw_split(24, (6, 8, 10), seed=2)
    method = WeightsReinforce(cut, batch=4, samples=2)
    trajectory = method(lookup, split, 60, seed=2)
    assert trajectory.method == "reinforce (decider weights)"
    spent = [cost for cost, _, _ in trajectory.trials]
    vals = [val for _, _, val in trajectory.trials]
    # the start's validation, then the train questions' upstream outputs once, then per
    # epoch 4 x 2 draws and 8 validation questions at a third of a run each
    assert spent[0] == len(split.val) and vals[0] == pytest.approx(lookup.score(0, split.val))
    epochs = [(c - len(split.val) - len(split.train)) / ((4 * 2 + 8) / 3) for c in spent[1:]]
    assert all(abs(k - round(k)) < 1e-9 and round(k) >= 1 for k in epochs), (spent, epochs)
    assert max(spent) <= 60 and vals == sorted(set(vals))
    assert len(vals) > 1  # the policy gradient found weights better on validation
    assert WeightsReinforce(cut)(lookup, split, len(split.val) - 1, seed=0).trials == []


def test_only_a_table_with_a_decider_gets_the_methods(cut) -> None:
    assert set(weights_methods(cut)) == {"optuna tpe (+ decider weights)",
                                         "cma-es (+ decider weights)",
                                         "cma-es (decider weights, start config)",
                                         "reinforce (decider weights)"}
    assert weights_methods(TABLES / "code_gen_models3") == {}
    with pytest.raises(ConfigError, match="one decider"):
        decider_grid(str(TABLES / "code_gen_models3"))


def test_an_unknown_sampler_is_refused(cut, lookup) -> None:
    split = draw_split(24, (6, 8, 10), seed=0)
    with pytest.raises(ConfigError, match="sampler must be"):
        WeightsSearch(cut, "annealing")(lookup, split, 100, seed=0)


def test_grid_scores_break_ties_toward_the_earlier_candidate() -> None:
    from coalign.compare._weights_search import DeciderGrid

    f = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    grid = DeciderGrid(((f,),), ((np.array([1.0, 0.0, 0.0]),),), np.array([1.0, 0.0]))
    assert grid.scores(0, np.array([1.0, 0.0]), [0]).tolist() == [1.0]
    assert grid.scores(0, np.array([0.0, 1.0]), [0]).tolist() == [0.0]
