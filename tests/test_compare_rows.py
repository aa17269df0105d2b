"""Finished compare rows kept in a results file: the hand-over between sessions whose run dirs do
not survive."""
import argparse
import json

import pytest

from benchmarks import compare as compare_script
from coalign.store import RunStore


def row(metric: float, scores: list[float], runs: float = 10.0) -> dict:
    return {"test_metric": metric, "equiv_runs": runs, "llm_calls": 20, "wall_s": 3.0,
            "scores": scores}


def test_a_finished_row_is_measured_once_and_reused_on_a_fresh_machine(tmp_path):
    compare = compare_script
    results = tmp_path / "results"
    calls = []

    def measure() -> dict:
        calls.append(1)
        return {"test_metric": 0.5, "equiv_runs": 12.0, "llm_calls": 24, "scores": [1.0, 0.0]}

    store = RunStore(tmp_path / "machine1" / "sys-seed0-abc")
    saved = compare.SavedRows(results, "sys-seed0-abc")
    first = compare.finished(store, saved, "coalign", measure)
    assert first["wall_s"] >= 0 and "code" in first
    assert compare.finished(store, saved, "coalign", measure) == first
    store.close()
    kept = json.loads((results / "sys-seed0-abc.json").read_text())
    assert kept["rows"]["coalign"] == first
    assert not list(results.glob("*.tmp"))  # written whole, then renamed

    # another machine: an empty run dir, the committed results file
    fresh = RunStore(tmp_path / "machine2" / "sys-seed0-abc")
    assert compare.finished(fresh, saved, "coalign", measure) == first
    assert fresh.get_meta("compare:coalign") == first  # copied in: a resume sees it too
    assert len(calls) == 1


def test_a_row_only_the_run_dir_holds_is_copied_into_the_results_file(tmp_path):
    compare = compare_script
    store = RunStore(tmp_path / "run")
    store.set_meta("compare:reinforce", row(0.6, [1.0]))
    saved = compare.SavedRows(tmp_path / "results", "run")
    assert compare.stored_row(store, saved, "reinforce") == row(0.6, [1.0])
    assert saved.get("reinforce") == row(0.6, [1.0])
    assert compare.stored_row(store, saved, "dspy_gepa") is None
    saved.put("random_search", row(0.4, [0.0]))
    assert set(saved.rows()) == {"reinforce", "random_search"}  # a put keeps the other rows


def test_no_results_dir_keeps_rows_nowhere(tmp_path):
    compare = compare_script
    saved = compare.SavedRows(None, "run")
    saved.put("coalign", row(0.5, [1.0]))
    assert saved.rows() == {} and saved.get("coalign") is None


def test_a_damaged_results_file_is_named_in_one_line(tmp_path):
    compare = compare_script
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(SystemExit, match=r"run\.json: not a compare results file"):
        compare.SavedRows(tmp_path, "run").rows()


def test_status_reads_the_results_file_when_the_run_dir_is_gone(tmp_path, capsys):
    compare = compare_script
    cfg = compare.run_config("pubmedqa_select", False, 1)
    name = compare.system_dir(tmp_path, "pubmedqa_select", 1, cfg).name
    saved = compare.SavedRows(tmp_path / "results", name)
    saved.put("unoptimized", row(0.25, [0.0, 0.0, 1.0, 0.0], runs=0.0))
    saved.put("coalign", row(0.75, [1.0, 1.0, 1.0, 0.0]))
    saved.put("random_search", row(0.5, [1.0, 0.0, 1.0, 0.0]))
    args = argparse.Namespace(systems=["pubmedqa_select"], seeds=[1], quick=False, dspy=False)
    found = compare.status(args, tmp_path / "runs", tmp_path / "results")
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(f"{name}: no run dir; 3 rows in {saved.path}")
    assert out[2] == "  coalign test 0.750, 10.0 equiv runs, 20 LLM requests, 3 s"
    assert out[4].startswith("  coalign - random_search: +0.250 [")
    rows = found["systems"]["pubmedqa_select"]
    assert rows["coalign"]["per_seed"][0]["diff_vs_unoptimized"]["mean"] == 0.5
    assert found["complete"] == {"pubmedqa_select": False}  # REINFORCE is missing
    assert not (tmp_path / "runs").exists()  # status made no run dir


def test_baselines_without_coalign_s_row_are_refused_before_any_llm_call(tmp_path):
    compare = compare_script
    cfg = compare.run_config("pubmedqa_select", True, 0)
    name = compare.system_dir(tmp_path, "pubmedqa_select", 0, cfg).name
    compare.SavedRows(tmp_path / "results", name).put("unoptimized", row(0.25, [0.0] * 4, 0.0))
    with pytest.raises(SystemExit, match="coalign has no row yet: run --methods coalign first"):
        compare.run_system("pubmedqa_select", True, 0, tmp_path, methods=("random_search",),
                           results=tmp_path / "results")
