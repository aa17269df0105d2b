import pytest

from coalign.component import FunctionComponent
from coalign.optimize._ledger import Ledger, planned_runs, prefix_discount
from coalign.system import System


def chain(n):
    comps, prev = [], "x"
    for i in range(n):
        out = f"f{i}"
        comps.append(FunctionComponent(f"c{i}", lambda x, c, ctx, o=out: {o: 1}, [prev], [out]))
        prev = out
    return System("chain", comps, ["x"], prev)


def test_prefix_discount_of_a_three_chain_is_two_thirds():
    assert prefix_discount(chain(3)) == pytest.approx(2 / 3)
    assert prefix_discount(chain(1)) == pytest.approx(1.0)
    assert prefix_discount(chain(4)) == pytest.approx((4 + 3 + 2 + 1) / 16)


def test_reference_amazon_arithmetic():
    # 60 pairs x 2 runs; 5 updates x 10 fresh pairs x 2 runs; 20 val inputs x 7 accepts x 2/3
    plan = planned_runs(pairs_per_component=60, runs_per_pair=2, adapt_updates=5, fresh_pairs=10,
                        val_size=20, validations=7, discount=prefix_discount(chain(3)))
    assert plan == pytest.approx({"lrf_train": 120, "adapt": 100, "validation": 280 / 3})
    total = sum(plan.values())
    assert total == pytest.approx(313.33, abs=0.01) and round(total / 1000, 2) == 0.31


def test_ledger_rows_and_total():
    led = Ledger({"validation": 3.0, "lrf_train": 10.0, "random_search": 1.5},
                 {"lrf_train": 40})
    assert [r[0] for r in led.rows()] == ["lrf_train", "validation", "random_search"]
    assert led.total_runs == pytest.approx(14.5)
    assert led.to_json()["llm_calls"] == {"lrf_train": 40}
    assert led.to_json()["cache_hits"] == {} and led.rows()[0] == ("lrf_train", 10.0, 40, 0)
    hit = Ledger({"lrf_train": 10.0}, {"lrf_train": 40}, {"lrf_train": 7})
    assert hit.rows() == [("lrf_train", 10.0, 40, 7)]
    assert hit.to_json()["cache_hits"]["lrf_train"] == 7
