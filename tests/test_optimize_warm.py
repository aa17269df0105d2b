"""The loop's warm start: a global TPE search over the finite params before stage 1."""

from __future__ import annotations

from coalign.optimize import BudgetSpec
from tests.test_optimize_loop import make_optimizer, writer_lm


def test_warm_start_starts_the_loop_from_the_best_validated_config(tmp_path):
    cold = make_optimizer(tmp_path / "cold", writer_lm())
    cold.prepare()
    assert cold.config["pick"]["level"] == 1 and cold.store.get_meta("warm_start") is None
    # 3 levels x 4 validation inputs: a budget of 12 affords every level
    warm = make_optimizer(tmp_path / "warm", writer_lm(), warm_start=12)
    warm.prepare()
    assert warm.config["pick"]["level"] == 3  # +0.1 a level on every input
    meta = warm.store.get_meta("warm_start")
    levels = [t["config"]["pick"]["level"] for t in meta["trials"]]
    assert levels[0] == 1 and sorted(levels) == [1, 2, 3]
    assert [t["spent"] for t in meta["trials"]] == [4.0, 8.0, 12.0]
    assert warm.account.equivalent_runs("warm_start") == 12
    # the best's validation traces are the current ones: validating it again costs nothing
    assert warm.account.equivalent_runs("validation") == 0
    assert warm.val_score == max(t["score"] for t in meta["trials"])
    # stage 1 ran under the warm config, then the steps go on from it
    assert warm.account.equivalent_runs("lrf_train") > 0
    for rec in warm.run():
        assert rec.val_before >= meta["score"] - 1e-12


def test_warm_start_stays_within_its_budget(tmp_path):
    warm = make_optimizer(tmp_path, writer_lm(), warm_start=9)  # two validations fit, not three
    warm.prepare()
    assert len(warm.store.get_meta("warm_start")["trials"]) == 2
    assert warm.account.equivalent_runs("warm_start") == 8


def test_a_resumed_run_keeps_its_warm_start_without_redoing_it(tmp_path):
    lm = writer_lm()
    first = make_optimizer(tmp_path, lm, warm_start=12)
    first.prepare()
    spent, calls = first.account.equivalent_runs(), lm.calls
    first.store.close()
    again = make_optimizer(tmp_path, lm, warm_start=12)
    again.prepare()
    assert again.config["pick"]["level"] == 3
    assert again.account.equivalent_runs() == spent and lm.calls == calls
    again.store.close()


def test_a_killed_warm_start_before_stage_1_is_not_redone_and_keeps_its_cost(tmp_path):
    lm = writer_lm()
    first = make_optimizer(tmp_path, lm, warm_start=12)
    first._start = first._resume()
    first._warm_start()  # the process dies here, before stage 1
    first.store.close()
    again = make_optimizer(tmp_path, lm, warm_start=12)
    again.prepare()
    assert again.config["pick"]["level"] == 3
    assert again.account.equivalent_runs("warm_start") == 12
    again.store.close()


def test_warm_start_is_a_budget_field_of_the_run_config():
    assert BudgetSpec().warm_start == 0
    assert BudgetSpec(warm_start=250).warm_start == 250
