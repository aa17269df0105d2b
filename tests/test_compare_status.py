import argparse
import importlib.util

from coalign.store import RunStore
from tests.conftest import ROOT


def load_compare():
    spec = importlib.util.spec_from_file_location("compare", ROOT / "benchmarks" / "compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_status_lists_finished_rows_and_runs_nothing(tmp_path, capsys):
    compare = load_compare()
    args = argparse.Namespace(systems=["multihop_qa", "pubmedqa_select"], seeds=[0], quick=False)
    cfg = compare.run_config("pubmedqa_select", False, 0)
    where = compare.system_dir(tmp_path, "pubmedqa_select", 0, cfg)
    store = RunStore(where)
    store.set_meta("stage1_done", True)
    store.set_meta("compare:coalign", {"test_metric": 0.58, "equiv_runs": 569.0,
                                       "llm_calls": 1138, "wall_s": 2918.0, "resumed": True})
    store.close()

    compare.status(args, tmp_path)
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("multihop_qa-seed0-" + compare.run_config(
        "multihop_qa", False, 0).digest[:8] + ": not started")
    assert out[1].endswith("stage 1 done, 0/8 iterations, 0 accepted")
    assert out[2] == ("  coalign test 0.580, 569.0 equiv runs, 1138 LLM requests, 2918 s "
                      "(since a resume)")
    assert len(out) == 3  # methods without a row are not listed
    assert not (tmp_path / f"multihop_qa-seed0-{cfg.digest[:8]}").exists()
