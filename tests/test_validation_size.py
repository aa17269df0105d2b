"""benchmarks.validation_size: the test gain of exhaustive search over a validation set."""

import numpy as np
import pytest

from benchmarks.validation_size import gains


def test_a_config_better_on_every_question_is_found_with_its_true_gain():
    scores = np.zeros((3, 50))
    scores[2] = 0.2  # config 2 beats the start by 0.2 on every question
    scores[1] = 0.1
    row = gains(scores, val_size=10, splits=20, min_test=10, seed=0)
    assert row["gain"] == pytest.approx(0.2) and row["lo"] == pytest.approx(0.2)
    assert row["start_picked"] == 0 and row["test"] == 40


def test_noise_picked_on_validation_does_not_carry_to_test():
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 2, size=(40, 1000)).astype(float)  # no config is truly better
    in_sample = scores.mean(axis=1).max() - scores[0].mean()  # what picking on all finds
    row = gains(scores, val_size=100, splits=50, min_test=100, seed=0)
    assert in_sample > 0.03 and abs(row["gain"]) < in_sample / 2


def test_a_validation_set_that_leaves_too_few_test_questions_is_refused():
    with pytest.raises(SystemExit, match="validation size 45 leaves fewer than 10 of 50"):
        gains(np.zeros((2, 50)), val_size=45, splits=1, min_test=10, seed=0)
