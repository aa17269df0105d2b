"""Reward-to-go and the position-bucketed baseline."""

import random

import pytest

from coalign.rubric import bucketed_advantages, outcome_step_rewards, position_bucket, reward_to_go


def test_reward_to_go_sums_the_future():
    assert reward_to_go([0.5, -0.25, 1.0]) == [1.25, 0.75, 1.0]
    assert reward_to_go([1.0, 1.0], gamma=0.5) == [1.5, 1.0]
    assert reward_to_go([]) == []


def test_outcome_rewards_give_every_step_the_outcome():
    assert reward_to_go(outcome_step_rewards(3, 1.0)) == [1.0, 1.0, 1.0]
    assert outcome_step_rewards(0, 1.0) == []


def test_position_buckets():
    assert position_bucket(0, "search") == "search_1"
    assert position_bucket(1, "search") == "search_2"
    assert position_bucket(0, "answer") == position_bucket(2, "answer") == "terminal"


def test_advantages_have_zero_mean_within_each_bucket():
    rng = random.Random(3)
    buckets = [rng.choice(["search_1", "search_2", "terminal"]) for _ in range(200)]
    returns = [rng.uniform(-2, 2) for _ in buckets]
    adv, baseline = bucketed_advantages(returns, buckets)
    for b in set(buckets):
        members = [a for a, bb in zip(adv, buckets, strict=True) if bb == b]
        assert len(members) >= 2
        assert sum(members) / len(members) == pytest.approx(0.0, abs=1e-12)
    assert set(baseline) == set(buckets)


def test_singleton_bucket_falls_back_to_the_batch_mean():
    returns = [1.0, 0.0, 0.5, 2.0]
    buckets = ["search_1", "search_1", "terminal", "search_2"]  # search_2, terminal: 1 entry
    adv, baseline = bucketed_advantages(returns, buckets)
    overall = sum(returns) / len(returns)
    assert baseline["search_1"] == pytest.approx(0.5)
    assert baseline["search_2"] == pytest.approx(overall)
    assert baseline["terminal"] == pytest.approx(overall)
    assert adv[3] == pytest.approx(2.0 - overall)  # not zeroed out
    assert adv[0] == pytest.approx(0.5)


def test_single_step_batch_uses_zero_baseline():
    adv, baseline = bucketed_advantages([0.7], ["terminal"])
    assert adv == [pytest.approx(0.7)] and baseline == {"terminal": 0.0}


def test_min_count_is_configurable_and_lengths_checked():
    adv, _ = bucketed_advantages([1.0, 3.0, 5.0], ["a", "a", "b"], min_count=3)
    assert adv == pytest.approx([-2.0, 0.0, 2.0])  # every bucket falls back to mean 3.0
    with pytest.raises(ValueError):
        bucketed_advantages([1.0], ["a", "b"])
