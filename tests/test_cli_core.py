import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

COALIGN = [sys.executable, "-m", "coalign"]


def run_cli(*args, timeout=300):
    return subprocess.run([*COALIGN, *args], capture_output=True, text=True, timeout=timeout)


def one_line_error(proc):
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def test_unknown_system_is_a_one_line_error(tmp_path):
    err = one_line_error(run_cli("evaluate", "nosuch", "--run-dir", str(tmp_path)))
    assert "unknown system 'nosuch'" in err and "multihop_qa" in err


def test_missing_dataset_file(tmp_path):
    err = one_line_error(run_cli("evaluate", "multihop_qa", "--data",
                                 str(tmp_path / "absent.jsonl"), "--run-dir", str(tmp_path)))
    assert "absent.jsonl" in err and "not found" in err


def test_malformed_dataset_row(tmp_path):
    bad = tmp_path / "rows.jsonl"
    good = {"id": "a", "inputs": {"question": "q", "paragraphs": []}, "target": "x"}
    bad.write_text(json.dumps(good) + "\n" + '{"id": "b", "target": "y"}\n')
    err = one_line_error(run_cli("evaluate", "multihop_qa", "--data", str(bad),
                                 "--run-dir", str(tmp_path / "run")))
    assert "rows.jsonl line 2" in err and "'inputs'" in err


def test_bad_config_file(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"retriever": {"k": 7}}))
    err = one_line_error(run_cli("evaluate", "multihop_qa", "--config", str(cfg), "--limit", "1",
                                 "--run-dir", str(tmp_path / "run")))
    assert "choice 7 is not one of [1, 3, 5, 10]" in err


def cache_rows(run_dir: Path) -> int:
    path = run_dir / "lm_cache.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


def stored_traces(run_dir: Path) -> int:
    path = run_dir / "run.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path) as db:
            return db.execute("SELECT COUNT(*) FROM traces").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.llm
@pytest.mark.slow
def test_kill_9_during_evaluate_then_resume_repeats_no_llm_call(tmp_path):
    run_dir, n = tmp_path / "run", 6
    args = ["evaluate", "multihop_qa", "--data", "world", "--limit", str(n), "--model",
            "smollm2-135m", "--workers", "1", "--run-dir", str(run_dir)]
    proc = subprocess.Popen([*COALIGN, *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and stored_traces(run_dir) < 2 and proc.poll() is None:
        time.sleep(0.2)
    # land mid-example: wait for at least one more LLM call beyond the stored traces
    target = cache_rows(run_dir) + 1
    while time.time() < deadline and cache_rows(run_dir) < target and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "evaluation finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    calls_before = cache_rows(run_dir)
    done_before = stored_traces(run_dir)
    assert 2 <= done_before < n

    summary = tmp_path / "summary.json"
    second = run_cli(*args, "--json", str(summary))
    assert second.returncode == 0, second.stderr
    s = json.loads(summary.read_text())
    assert s["resumed"] == done_before and s["examples"] == n
    # every LLM call of the killed run is served from the cache, none is made twice
    assert cache_rows(run_dir) == calls_before + s["llm_calls"]
    assert cache_rows(run_dir) == 3 * n  # three LLM components per example, each called once
    assert s["cache_hits"] == calls_before - 3 * done_before
    assert "cache hits" in second.stdout
