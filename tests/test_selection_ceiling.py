"""``benchmarks/selection_ceiling.picks``: each pick is the config with the best mean on its own
questions, scored on test."""

import numpy as np
import pytest

from benchmarks.selection_ceiling import picks


def test_each_pick_is_the_best_config_on_its_questions_scored_on_test():
    # questions 0-1 train, 2-3 val, 4-5 test; config 1 wins val, config 2 wins val+train
    scores = np.array([[0.0, 0.0, 0.5, 0.5, 0.5, 0.5],
                       [0.0, 0.0, 1.0, 1.0, 0.0, 0.0],
                       [1.0, 1.0, 0.9, 0.9, 1.0, 0.5]])
    got = picks(scores, train=[0, 1], val=[2, 3], test=[4, 5])
    assert got["start"] == pytest.approx(0.5)
    assert got["val"] == pytest.approx(0.0)
    assert got["val+train"] == pytest.approx(0.75)
    assert got["test (best global config)"] == pytest.approx(0.75)
