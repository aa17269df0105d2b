import argparse

from benchmarks import compare
from coalign.store import RunStore


def test_status_lists_finished_rows_and_runs_nothing(tmp_path, capsys):
    args = argparse.Namespace(systems=["multihop_qa", "pubmedqa_select"], seeds=[0], quick=False)
    cfg = compare.run_config("pubmedqa_select", False, 0)
    where = compare.system_dir(tmp_path, "pubmedqa_select", 0, cfg)
    store = RunStore(where)
    store.set_meta("stage1_done", True)
    store.set_meta("compare:coalign", {"test_metric": 0.58, "equiv_runs": 569.0,
                                       "llm_calls": 1138, "wall_s": 2918.0, "resumed": True,
                                       "scores": [1.0, 1.0, 0.0, 1.0]})
    store.set_meta("compare:random_search", {"test_metric": 0.5, "equiv_runs": 552.0,
                                             "llm_calls": 1104, "wall_s": 5816.0,
                                             "scores": [1.0, 0.0, 0.0, 1.0]})
    store.close()

    compare.status(args, tmp_path)
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("multihop_qa-seed0-" + compare.run_config(
        "multihop_qa", False, 0).digest[:8] + ": no run dir")
    assert out[1].endswith("stage 1 done, 0/8 iterations, 0 accepted")
    assert out[2] == ("  coalign test 0.580, 569.0 equiv runs, 1138 LLM requests, 2918 s "
                      "(since a resume)")
    assert out[3] == "  random_search test 0.500, 552.0 equiv runs, 1104 LLM requests, 5816 s"
    # paired differences 0, +1, 0, 0: every bootstrap mean is >= 0
    assert out[4].startswith("  coalign - random_search: +0.250 [+0.000, ")
    assert len(out) == 5  # methods without a row are not listed
    assert not (tmp_path / f"multihop_qa-seed0-{cfg.digest[:8]}").exists()


def test_coalign_gets_a_paired_difference_to_every_method_with_scores():
    out = {"unoptimized": {"scores": [0.0, 0.0, 1.0, 0.0]},
           "coalign": {"scores": [1.0, 1.0, 1.0, 0.0]},
           "random_search": {"scores": [1.0, 0.0, 1.0, 1.0]},
           "dspy_mipro": {"skipped": "budget too small", "test_metric": float("nan")}}
    compare.with_differences(out, seed=0)
    assert out["coalign"]["diff_vs_unoptimized"]["mean"] == 0.5
    assert out["random_search"]["diff_vs_unoptimized"]["mean"] == 0.5
    versus = out["coalign"]["diff_vs"]
    assert set(versus) == {"random_search"}  # a skipped method has nothing to pair with
    # paired differences 0, +1, 0, -1: mean 0, and the interval spans it
    assert versus["random_search"]["mean"] == 0.0
    lo, hi = versus["random_search"]["ci95"]
    assert lo < 0 < hi and 0 < versus["random_search"]["p_better"] < 1
    assert "diff_vs_unoptimized" not in out["dspy_mipro"]


def test_status_shows_a_running_baseline_from_its_progress(tmp_path, capsys):
    cfg = compare.run_config("pubmedqa_select", False, 0)
    store = RunStore(compare.system_dir(tmp_path, "pubmedqa_select", 0, cfg))
    store.set_meta("compare:coalign", {"test_metric": 0.6, "equiv_runs": 834.0,
                                       "llm_calls": 1668, "wall_s": 5873.0, "scores": [1.0]})
    on_trial = compare.progress(store, "random_search", 834.0)
    on_trial("d0", 0.07, 100.0)
    on_trial("d1", 0.62, 200.0)
    on_trial("d2", 0.41, 300.0)
    policy = compare.progress(store, "reinforce", 834.0)
    policy("update 1", 0.9, 4.0)  # a minibatch's train score is no validation score
    policy("update 2", 0.95, 8.0)
    store.close()
    args = argparse.Namespace(systems=["pubmedqa_select"], seeds=[0], quick=False)
    compare.status(args, tmp_path)
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [
        "  random_search running: 3 configs scored (best val 0.620), 300/834 equiv runs",
        "  reinforce running: 2 policy updates, 0 configs scored, 8/834 equiv runs"]


def test_status_json_holds_the_finished_rows_with_their_differences(tmp_path):
    from coalign.data import split
    from coalign.runner import load_dataset
    from coalign.systems import SYSTEMS
    from coalign.trace import Trace

    cfg = compare.run_config("pubmedqa_select", True, 0)  # --quick: 4 test questions
    store = RunStore(compare.system_dir(tmp_path, "pubmedqa_select", 0, cfg))
    s = cfg.split
    test = split(load_dataset(cfg.data, s.train + s.val + s.test, cfg.seed),
                 [s.train, s.val, s.test], seed=s.seed)[2]
    digest = SYSTEMS["pubmedqa_select"](cfg.model).system.default_config().digest
    for e, reward in zip(test[:3], [0.0, 0.0, 1.0], strict=True):
        store.put_trace("test", Trace(e.id, digest, {}, reward=reward))
    args = argparse.Namespace(systems=["pubmedqa_select"], seeds=[0], quick=True)
    store.set_meta("compare:coalign", {"test_metric": 0.75, "equiv_runs": 10.0, "llm_calls": 20,
                                       "wall_s": 5.0, "scores": [1.0, 1.0, 1.0, 0.0]})
    assert compare.status(args, tmp_path)["systems"]["pubmedqa_select"] == {}  # 3 of 4 traces
    store.put_trace("test", Trace(test[3].id, digest, {}, reward=0.0))
    store.set_meta("compare:random_search", {"test_metric": 0.5, "equiv_runs": 10.0,
                                             "llm_calls": 20, "wall_s": 9.0,
                                             "scores": [1.0, 0.0, 1.0, 0.0]})
    store.close()
    found = compare.status(args, tmp_path)
    rows = found["systems"]["pubmedqa_select"]
    assert list(rows) == ["unoptimized", "coalign", "random_search"]
    assert rows["unoptimized"]["test_metric"] == 0.25
    coalign = rows["coalign"]["per_seed"][0]
    assert coalign["diff_vs_unoptimized"]["mean"] == 0.5
    assert coalign["diff_vs"]["random_search"]["mean"] == 0.25
    assert found["complete"] == {"pubmedqa_select": False}  # REINFORCE has not finished
