"""benchmarks._results: the benchmark scripts' result files (command, commit, machine; atomic)."""

import argparse
import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from benchmarks import _results
from benchmarks._results import add_json_option, head_commit, write_result
from tests.conftest import ROOT


def as_module(monkeypatch, name: str, *args: str) -> None:
    """This process as ``python -m NAME ARGS`` (argv[0] is then the file's absolute path)."""
    monkeypatch.setattr(sys, "argv", [str(ROOT / "benchmarks" / "x.py"), *args])
    monkeypatch.setitem(sys.modules, "__main__",
                        types.SimpleNamespace(__spec__=types.SimpleNamespace(name=name)))


def test_a_result_file_holds_the_result_and_its_command_commit_and_machine(tmp_path,
                                                                            monkeypatch):
    as_module(monkeypatch, "benchmarks.validation_size", "TABLE", "--json", "out dir/v.json")
    path = tmp_path / "replay" / "v.json"  # a missing folder is made
    written = write_result(path, {"table": "TABLE", "rows": [{"gain": 0.1}]}, indent=1)
    on_disk = json.loads(path.read_text())
    assert on_disk == written
    assert on_disk["table"] == "TABLE" and on_disk["rows"] == [{"gain": 0.1}]
    assert on_disk["command"] == ("python -m benchmarks.validation_size TABLE --json "
                                  "'out dir/v.json'")  # quoted: it can be pasted back
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert on_disk["commit"] == head_commit() and on_disk["commit"].split("+")[0] == head
    machine = on_disk["machine"]
    assert set(machine) == {"cpu_count", "load_avg_1m", "python", "platform"}
    assert machine["cpu_count"] >= 1 and machine["python"].startswith("3.")
    assert path.read_text().endswith("}\n") and path.read_text().startswith('{\n "table"')
    assert sorted(p.name for p in path.parent.iterdir()) == ["v.json"]  # no temp file left


def test_a_commit_read_at_the_start_is_the_one_written(tmp_path):
    written = write_result(tmp_path / "r.json", {"a": 1}, commit="0" * 40)
    assert written["commit"] == "0" * 40


def test_a_write_that_fails_leaves_the_previous_file_whole_and_no_temp_file(tmp_path,
                                                                           monkeypatch):
    path = tmp_path / "r.json"
    write_result(path, {"a": 1})
    before = path.read_text()
    with pytest.raises(TypeError):
        write_result(path, {"a": object()})  # not JSON
    def refuse(*_):
        raise OSError("disk full")

    monkeypatch.setattr(_results.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_result(path, {"a": 2})  # the temp file is written, the rename fails
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_outside_a_checkout_the_commit_is_none(tmp_path, monkeypatch):
    monkeypatch.setattr(_results, "ROOT", tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert head_commit() is None
    assert write_result(tmp_path / "r.json", {})["commit"] is None


def test_the_commit_says_dirty_when_the_code_has_uncommitted_changes(tmp_path, monkeypatch):
    def run(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    for folder in ("src", "benchmarks/results"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    (tmp_path / "benchmarks" / "b.py").write_text("y = 1\n")
    (tmp_path / "benchmarks" / "results" / "r.json").write_text("{}\n")
    run("init", "-q")
    run("add", ".")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    monkeypatch.setattr(_results, "ROOT", tmp_path)
    head = _results.git("rev-parse", "HEAD")
    (tmp_path / "benchmarks" / "results" / "r.json").write_text("{\"a\": 1}\n")
    (tmp_path / "notes.txt").write_text("untracked\n")
    assert head_commit() == head  # a result being written or a stray file is not the code
    (tmp_path / "benchmarks" / "b.py").write_text("y = 2\n")
    assert head_commit() == f"{head}+dirty"
    run("checkout", "--", "benchmarks/b.py")
    (tmp_path / "src" / "a.py").write_text("x = 2\n")
    assert head_commit() == f"{head}+dirty"


def test_the_json_option_gives_a_path_or_none():
    parser = argparse.ArgumentParser()
    add_json_option(parser)
    assert parser.parse_args(["--json", "a/b.json"]).json == Path("a/b.json")
    assert parser.parse_args([]).json is None


def test_no_benchmark_edits_sys_path_or_asks_git_itself():
    scripts = [p for p in (ROOT / "benchmarks").glob("*.py") if p.name != "_results.py"]
    assert len(scripts) > 20
    for path in scripts:
        text = path.read_text()
        assert not re.search(r'sys\.path\.(insert|append)|\["git"|PYTHONPATH=src', text), path.name


def _compare_file(path: Path, coalign: list[float], seeds=(0, 1, 2)) -> str:
    scores = {"coalign": {"250.0": coalign}, "random search": {"250.0": [0.5, 0.5, 0.5]}}
    path.write_text(json.dumps({"tables": {"t": {"seeds": list(seeds), "split": [2, 3, 5],
                                                 "scores": scores}}}))
    return str(path)


def test_rows_of_two_result_files_pair_seed_by_seed(tmp_path):
    from benchmarks.paired_rows import paired

    a = _compare_file(tmp_path / "a.json", [0.7, 0.8, 0.9])
    b = _compare_file(tmp_path / "b.json", [0.5, 0.6, 0.7])
    d = paired(a, b)["250.0"]
    assert d["mean"] == pytest.approx(0.2) and d["lo"] == pytest.approx(0.2)
    assert paired(a, f"{b}:random search")["250.0"]["mean"] == pytest.approx(0.3)
    other = _compare_file(tmp_path / "c.json", [0.5, 0.6, 0.7], seeds=(3, 4, 5))
    with pytest.raises(SystemExit, match="share no seed"):
        paired(a, other)
    # a file with more seeds pairs on the ones both hold: seeds 1 and 2 here
    more = _compare_file(tmp_path / "d.json", [0.1, 0.2, 0.3, 0.4], seeds=(2, 1, 7, 8))
    d = paired(a, more)["250.0"]
    assert d["seeds"] == 2 and d["mean"] == pytest.approx(((0.8 - 0.2) + (0.9 - 0.1)) / 2)
    with pytest.raises(SystemExit, match="no row 'tpe'"):
        paired(f"{a}:tpe", b)


def test_the_best_baseline_per_budget_and_a_rule_ablation_file_pair_too(tmp_path):
    from benchmarks.paired_rows import paired

    scores = {"coalign": {"250.0": [0.6, 0.6, 0.6], "500.0": [0.6, 0.6, 0.6]},
              "random search": {"250.0": [0.5, 0.5, 0.5], "500.0": [0.7, 0.7, 0.7]},
              "optuna tpe": {"250.0": [0.55, 0.55, 0.55], "500.0": [0.6, 0.6, 0.6]},
              "best global config on test": {"250.0": [0.9] * 3, "500.0": [0.9] * 3}}
    compare = tmp_path / "compare.json"
    compare.write_text(json.dumps({"tables": {"t": {"seeds": [0, 1, 2], "split": [2, 3, 5],
                                                    "scores": scores}}}))
    ablation = tmp_path / "ablation.json"  # rule_ablation's layout: one table, variant rows
    ablation.write_text(json.dumps({"table": "benchmarks/tables/t", "seeds": [0, 1, 2],
                                    "split": [2, 3, 5],
                                    "scores": {"raw-gate": {"250.0": [0.65] * 3,
                                                            "500.0": [0.65] * 3}}}))
    d = paired(f"{ablation}:raw-gate", f"{compare}:best")
    # TPE is the best baseline at 250 runs, random search at 500; the ceiling is no baseline
    assert d["250.0"]["mean"] == pytest.approx(0.10) and d["500.0"]["mean"] == pytest.approx(-0.05)


def test_a_decider_lr_file_pairs_by_learning_rate(tmp_path):
    from benchmarks.paired_rows import paired

    lrs = tmp_path / "lr.json"  # decider_lr's layout: one table, one row per learning rate
    lrs.write_text(json.dumps({"table": "benchmarks/tables/t", "seeds": [0, 1, 2],
                               "split": [2, 3, 5],
                               "lrs": {"0.3": {"scores": {"250": [0.5, 0.6, 0.7]}},
                                       "1": {"scores": {"250": [0.6, 0.8, 0.7]}}}}))
    assert paired(f"{lrs}:1", f"{lrs}:0.3")["250.0"]["mean"] == pytest.approx(0.1)
    compare = _compare_file(tmp_path / "c.json", [0.4, 0.5, 0.6])
    assert paired(f"{lrs}:1", compare)["250.0"]["mean"] == pytest.approx(0.2)
    with pytest.raises(SystemExit, match="no row '0.05'"):
        paired(f"{lrs}:0.05", compare)


def test_files_joined_by_plus_pool_their_seeds_before_the_best_is_picked(tmp_path):
    from benchmarks.paired_rows import paired

    def scores(coalign, random, tpe):
        return {"coalign": {"250.0": coalign}, "random search": {"250.0": random},
                "optuna tpe": {"250.0": tpe}}

    first, later = tmp_path / "first.json", tmp_path / "later.json"
    for path, seeds, rows in ((first, [0, 1], scores([0.6, 0.6], [0.5, 0.5], [0.4, 0.4])),
                              (later, [2, 3], scores([0.6, 0.6], [0.3, 0.3], [0.7, 0.7]))):
        path.write_text(json.dumps({"tables": {"t": {"seeds": seeds, "split": [2, 3, 5],
                                                     "scores": rows}}}))
    d = paired(f"{first}+{later}", f"{first}+{later}:best")["250.0"]
    # over the four seeds TPE's mean (0.55) beats random search's (0.40): the pick is TPE
    assert d["seeds"] == 4 and d["mean"] == pytest.approx(0.05)
    with pytest.raises(SystemExit, match="share seeds"):
        paired(f"{first}+{first}", str(later))
    later.write_text(later.read_text().replace("[2, 3, 5]", "[2, 4, 4]"))
    with pytest.raises(SystemExit, match="differ in split"):
        paired(f"{first}+{later}", str(first))
