"""``benchmarks/pick_quality.py``: the loop's picks recorded where they are made and judged by the
replay table's scores of every open value."""

from pathlib import Path

import pytest

from benchmarks.pick_quality import recording, seed_rows, summarize
from coalign.compare import Lookup, coalign_method, draw_split, split_sizes
from coalign.optimize import _base, _step, value_key
from coalign.tables import Table, config_indices

TABLE = Path(__file__).resolve().parents[1] / "benchmarks" / "tables" / "multihop_qa_wide"


@pytest.fixture(scope="module")
def wide():
    table = Table(TABLE)
    rewards = table.rewards("greedy")
    lookup = Lookup.of_table(rewards, table.space)
    sizes = split_sizes(len(rewards.questions), [0.2, 0.3, 0.5])
    return table, rewards, lookup, sizes


def test_every_pick_of_a_loop_run_is_recorded_and_the_loop_is_left_as_it_was(wide):
    table, rewards, lookup, sizes = wide
    expand, pick = _step.expand, _base.BaseLocalOptimizer.pick
    decisions = []
    method = coalign_method(TABLE, rewards.questions, settings={"budget": {"proposals": "local"}})
    with recording(decisions):
        method(lookup, draw_split(len(rewards.questions), sizes, 0), 700, 0)
    assert _step.expand is expand and _base.BaseLocalOptimizer.pick is pick
    assert decisions
    for d in decisions:
        assert len(d.scored) == len(d.open_)
        keys = {value_key(s.value) for s in d.scored} | {value_key(d.current)}
        assert value_key(d.chosen) in keys


def test_the_top_value_is_scored_as_the_table_scores_its_config(wide):
    table, rewards, lookup, sizes = wide
    split = draw_split(len(rewards.questions), sizes, 0)
    decisions = []
    method = coalign_method(TABLE, rewards.questions, settings={"budget": {"proposals": "local"}})
    with recording(decisions):
        method(lookup, split, 700, 0)
    rows = seed_rows(TABLE, table.space, lookup, rewards.questions, sizes, 0, 700,
                     {"budget": {"proposals": "local"}})
    informative = [r for r in rows if r["open"] >= 2]
    assert informative, "the wide table's prompt slots have several open values"
    tabled = [d for d in decisions if f"{d.component}.{d.param}" in table.space.params]
    assert len(tabled) == len(rows)  # the same seed makes the same picks
    for d, row in zip(tabled, rows, strict=True):
        if row["open"] < 2:
            continue
        now = value_key(d.current)
        others = [s for s, o in zip(d.scored, d.open_, strict=True)
                  if o and value_key(s.value) != now]
        top = max(others, key=lambda s: s.reward)
        picks = config_indices(d.config.with_value(d.component, d.param, top.value).to_json(),
                               table.space)
        want = lookup.score(lookup.config([picks[s] for s in lookup.slots]), split.test)
        assert row["top_test"] == pytest.approx(want)
        assert 0.0 <= row["top_is_best"] <= 1.0 and row["chance"] == 1 / row["open"]
        assert row["pick_gain"] == (row.get("move_gain", 0.0))


def test_the_summary_pairs_per_seed_means_and_leaves_out_one_value_decisions():
    rows = [{"seed": s, "open": 2, "moved": False, "top_test": 0.6, "random_test": 0.5,
             "top_val": 0.7, "random_val": 0.5, "top_is_best": 1.0, "chance": 0.5,
             "pick_gain": 0.0, "random_gain": -0.1} for s in range(3)]
    rows.append({"seed": 0, "open": 1, "moved": True, "top_test": 0.0, "random_test": 0.0,
                 "top_val": 0.0, "random_val": 0.0, "top_is_best": 0.0, "chance": 1.0,
                 "move_gain": -0.2, "pick_gain": -0.2, "random_gain": -0.2})
    out = summarize(rows, [0, 1, 2])
    assert out["informative"] == 3 and out["decisions"] == 4
    assert out["top_minus_random_test"]["mean"] == pytest.approx(0.1)
    assert out["top_minus_random_val"]["mean"] == pytest.approx(0.2)
    assert out["top_is_best"]["rate"] == 1.0 and out["top_is_best"]["chance"] == 0.5
    assert out["moves"] == 1 and out["move_gain_test"] == pytest.approx(-0.2)
    # seed 0: stayed (0 against -0.1) and moved as random would (-0.2 both): +0.05; seeds 1-2:
    # +0.1 each
    assert out["pick_minus_random_gain"]["mean"] == pytest.approx((0.05 + 0.1 + 0.1) / 3)
