"""``coalign export``: the final config (and a selector's frozen reward) out of a run dir, and
the round trip through ``coalign evaluate --config`` and ``coalign.export.load_system``."""

import json
import shutil

import pytest

from coalign.errors import ConfigError
from coalign.export import load_system
from coalign.job import Job, parse_run_config
from coalign.runner import evaluate
from coalign.runtime import Runtime
from tests.selector_toy import WORDS, flip
from tests.test_cli_core import one_line_error, run_cli

SYSTEM = "tests.selector_toy:selector_task"
N = 18  # 8 train, 6 val, 4 test


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished toy run whose accepted step is an LRF selector, and its test scores."""
    root = tmp_path_factory.mktemp("export")
    data = root / "rows.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "target": 1.0, "inputs": {
        "query": f"please use {WORDS[i % 2]} for item {i}"}}) + "\n" for i in range(N)))
    cfg = parse_run_config({
        "system": SYSTEM, "data": str(data), "backbone": "hashing",
        "split": {"train": 8, "val": 6, "test": 4},
        "budget": {"iterations": 2, "search_size": 4, "fresh_inputs": 4, "rollout_n": 0}})
    job = Job.open(cfg, root / "run")
    job.optimizer.run()
    assert job.optimizer.policies, "the toy run accepts the LRF selector"
    _, after = job.evaluate_test()
    scores = {t.example_id: t.reward for t in after.traces}
    flip(job.optimizer.reward)  # the live reward moves on; the export must not follow it
    job.store.close()
    return root, data, job, scores


def test_export_then_evaluate_gives_the_runs_own_test_scores(run, tmp_path):
    root, data, job, scores = run
    out = tmp_path / "out" / "system.json"
    done = run_cli("export", str(root / "run"), "--out", str(out))
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["format"] == "coalign-system" and doc["system"] == SYSTEM
    assert doc["config"] == job.optimizer.config.to_json()
    (digest,) = job.optimizer.policies.values()
    selector = doc["selectors"]["chooser.option"]
    assert selector["digest"] == digest and (out.parent / selector["reward_model"]).is_dir()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp left
    # the CLI: evaluate every row with the exported file; the test rows score as in the run
    got = tmp_path / "eval.json"
    ev = run_cli("evaluate", SYSTEM, "--data", str(data), "--limit", str(N), "--config",
                 str(out), "--run-dir", str(tmp_path / "ev"), "--json", str(got))
    assert ev.returncode == 0, ev.stderr
    cli_scores = json.loads(got.read_text())["scores"]
    assert {i: cli_scores[i] for i in scores} == scores
    # the Python API
    loaded = load_system(out, job.task)
    api = evaluate(job.task, job.test, loaded.config, loaded.runtime(Runtime()))
    assert {t.example_id: t.reward for t in api.traces} == scores


def test_a_plain_config_file_still_loads(run, tmp_path):
    _, _, job, _ = run
    path = tmp_path / "plain.json"
    path.write_text(json.dumps({"chooser": {"option": "beta"}}))
    loaded = load_system(path, job.task)
    assert loaded.config["chooser"]["option"] == "beta" and not loaded.selectors
    assert loaded.tag == "eval"


def test_an_altered_reward_model_is_refused_in_one_line(run, tmp_path):
    root, _, job, _ = run
    out = tmp_path / "system.json"
    assert run_cli("export", str(root / "run"), "--out", str(out)).returncode == 0
    doc = json.loads(out.read_text())
    folder = out.parent / doc["selectors"]["chooser.option"]["reward_model"]
    doc["selectors"]["chooser.option"]["digest"] = "0" * 64
    out.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="system.json.*does not match its digest"):
        load_system(out, job.task)
    shutil.rmtree(folder)
    with pytest.raises(ConfigError, match="system.json.*reward model config .* is missing"):
        load_system(out, job.task)


def test_export_errors_are_one_line(tmp_path):
    err = one_line_error(run_cli("export", str(tmp_path / "none"), "--out",
                                 str(tmp_path / "s.json")))
    assert "no run store" in err
    cfg = parse_run_config({"system": "multihop_qa", "backbone": "hashing",
                            "split": {"train": 1, "val": 1, "test": 1}})
    Job.open(cfg, tmp_path / "fresh").store.close()
    err = one_line_error(run_cli("export", str(tmp_path / "fresh"), "--out",
                                 str(tmp_path / "s.json")))
    assert "has no optimizer step yet" in err and not (tmp_path / "s.json").exists()


def test_export_round_trip_on_a_replayed_multihop_run(tmp_path):
    """A ready-made system on a replay table (no LLM): the exported prompts and k must be the
    run's own, or evaluating them would miss the table."""
    from tests.test_tables import build, make_space

    build(tmp_path / "t", make_space(n_questions=6, samples=2))
    lm = f"replay:{tmp_path / 't'}"
    cfg = parse_run_config({
        "system": "multihop_qa", "data": "hotpotqa", "lm": lm, "backbone": "hashing",
        "split": {"train": 2, "val": 2, "test": 2},
        "budget": {"iterations": 2, "search_size": 2, "fresh_inputs": 2, "rollout_n": 2}})
    job = Job.open(cfg, tmp_path / "run")
    job.optimizer.run()
    _, after = job.evaluate_test()
    final = job.optimizer.config.to_json()
    job.store.close()
    out = tmp_path / "system.json"
    assert run_cli("export", str(tmp_path / "run"), "--out", str(out)).returncode == 0
    doc = json.loads(out.read_text())
    assert doc["config"] == final and doc["lm"] == lm and doc["selectors"] == {}
    got = tmp_path / "eval.json"
    ev = run_cli("evaluate", "multihop_qa", "--data", "hotpotqa", "--limit", "6", "--lm", lm,
                 "--config", str(out), "--run-dir", str(tmp_path / "ev"), "--json", str(got))
    assert ev.returncode == 0, ev.stderr
    scores = json.loads(got.read_text())["scores"]
    assert {t.example_id: scores[t.example_id] for t in after.traces} == {
        t.example_id: t.reward for t in after.traces}
