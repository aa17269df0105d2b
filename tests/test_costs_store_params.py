import json
import multiprocessing as mp
import os
import signal
import sqlite3

import pytest
import torch

from coalign.costs import CostAccount, equal_shares, equivalent_runs, executions, token_shares
from coalign.errors import ConfigError, DataError, StoreError
from coalign.pairs import PreferencePair, label_for
from coalign.params import Choice, Text, TextValue, Weights
from coalign.store import RunStore
from coalign.trace import Step, Trace, Usage
from tests._store_writer import write_forever


def trace(steps):
    return Trace("e", "cfg", {}, [Step(c, 0, {}, {}, reused=r, skipped=sk,
                                       usage=Usage(1, 0, p, 0)) for c, r, sk, p in steps])


def test_equivalent_runs_equal_shares_hand_example():
    # 3 components, equal shares of 1/3: two full runs + one run_from re-running only "c"
    full = trace([("a", False, False, 10), ("b", False, False, 10), ("c", False, False, 10)])
    partial = trace([("a", True, False, 10), ("b", True, False, 10), ("c", False, False, 10)])
    counts = executions([full, full, partial])
    assert counts == {"a": 2, "b": 2, "c": 3}
    assert equivalent_runs(counts, equal_shares(["a", "b", "c"])) == pytest.approx(7 / 3)


def test_skipped_steps_are_free_and_unknown_component_refused():
    t = trace([("a", False, False, 1), ("b", False, True, 1)])
    assert executions([t]) == {"a": 1}
    with pytest.raises(ConfigError, match="no cost share"):
        equivalent_runs({"z": 1}, {"a": 1.0})


def test_token_weighted_shares_hand_example():
    usage = {"a": Usage(prompt_tokens=300), "b": Usage(prompt_tokens=100), "r": Usage()}
    shares = token_shares(["a", "b", "r"], usage, {"a": 1, "b": 1, "r": 1})
    assert shares == pytest.approx({"a": 0.75, "b": 0.25, "r": 0.0})
    # a run_from of only "b" costs a quarter of a run under token weighting
    assert equivalent_runs({"b": 1}, shares) == pytest.approx(0.25)


def test_cost_account_phases():
    acc = CostAccount(["a", "b"])
    acc.add_traces("eval", [trace([("a", False, False, 5), ("b", False, False, 15)])])
    acc.add_traces("validation", [trace([("a", True, False, 5), ("b", False, False, 15)])])
    assert acc.equivalent_runs("eval") == pytest.approx(1.0)
    assert acc.equivalent_runs("validation") == pytest.approx(0.5)
    assert acc.equivalent_runs() == pytest.approx(1.5)
    assert acc.equivalent_runs(weighting="tokens") == pytest.approx(1.0 + 0.75)
    assert acc.total_usage("validation").prompt_tokens == 15


def test_params_json_round_trip():
    t = Text("Answer.", [{"question": "q", "answer": "a"}])
    assert t.from_json(t.to_json(t.default)) == t.default
    assert t.from_json("plain") == TextValue("plain")
    c = Choice([1, 3, 5], 3, scope="per_instance")
    assert c.space() == {"kind": "choice", "scope": "per_instance", "options": [1, 3, 5]}
    w = Weights(lambda: torch.nn.Linear(4, 1))
    back = w.from_json(json.loads(json.dumps(w.to_json(w.default))))
    assert all(torch.equal(back[k], w.default[k]) for k in w.default)
    assert w.space()["n_parameters"] == 5
    with pytest.raises(ConfigError, match="safetensors"):
        w.from_json({"safetensors_b64": "bm90IGEgdGVuc29y"})
    with pytest.raises(ConfigError, match="scope"):
        Choice([1], scope="sometimes")


def make_pair(i=0, label="a"):
    return PreferencePair("gen", f"ex{i}", {"q": "x"}, {"a": "1"}, {"a": "2"}, 0.9, 0.1, label)


def test_store_pairs_are_validated(tmp_path):
    store = RunStore(tmp_path)
    assert store.put_pairs([make_pair(0), make_pair(1), make_pair(0)]) == 2
    assert store.put_pairs([make_pair(0)]) == 0  # idempotent by digest
    assert [p.example_id for p in store.pairs("gen")] == ["ex0", "ex1"]
    db = sqlite3.connect(tmp_path / "run.sqlite")
    db.execute("UPDATE pairs SET json = replace(json, '0.9', '0.95') WHERE example_id='ex1'")
    db.commit()
    with pytest.raises(DataError, match="digest mismatch"):
        store.pairs()
    db.execute("UPDATE pairs SET json = '{\"component\": \"gen\"}' WHERE example_id='ex1'")
    db.commit()
    with pytest.raises(DataError, match="missing field 'example_id'"):
        store.pairs()


def test_label_for_ties():
    assert label_for(0.5, 0.5, 0.0) == "tie"
    assert label_for(0.52, 0.5, 0.05) == "tie"
    assert label_for(0.6, 0.5, 0.05) == "a" and label_for(0.1, 0.5, 0.05) == "b"


def test_store_traces_costs_meta(tmp_path):
    with RunStore(tmp_path) as store:
        t = trace([("a", False, False, 7)])
        t.reward = 0.5
        store.put_trace("eval", t)
        assert store.get_trace("eval", "e", "cfg").reward == 0.5
        assert store.get_trace("eval", "e", "other") is None
        store.add_cost("a", "eval", Usage(2, 1, 30, 4))
        store.add_cost("a", "eval", Usage(1, 0, 10, 1))
        assert store.costs()["a"] == Usage(3, 1, 40, 5)
        store.set_meta("system", {"name": "x"})
        assert store.get_meta("system") == {"name": "x"}
    with pytest.raises(StoreError, match="no run store"):
        RunStore(tmp_path / "nope", create=False)


def test_killed_writer_leaves_consistent_store(tmp_path):
    RunStore(tmp_path).close()
    proc = mp.get_context("spawn").Process(target=write_forever, args=(tmp_path,))
    proc.start()
    try:
        import time
        deadline = time.time() + 30
        while time.time() < deadline and len(RunStore(tmp_path, readonly=True).pairs()) < 50:
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
    pairs = RunStore(tmp_path).pairs()  # the killed writer's lock is gone; records validate
    assert len(pairs) >= 50
    assert [p.example_id for p in pairs] == [f"ex{i}" for i in range(len(pairs))]
