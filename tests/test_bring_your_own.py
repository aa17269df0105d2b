"""The issue's "must show", through the real command line: ``coalign optimize`` on a run config
whose system and metric come from a user module outside the package, and ``coalign evaluate
multihop_qa --data hotpotqa_distractor.jsonl`` on a Hugging Face-format file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coalign.store import RunStore
from tests.test_data_formats import official_hotpot, to_hf, write_jsonl
from tests.test_imports import TOY

# the console script, not `python -m`: the user's folder is on sys.path only by coalign's doing
COALIGN = str(Path(sys.executable).parent / "coalign")


def cli(cwd: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([COALIGN, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


def shown(proc: subprocess.CompletedProcess) -> str:
    """stdout with rich's line wrapping undone."""
    return " ".join(proc.stdout.split())


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's folder: their pipeline module and their data, nothing of coalign's."""
    (tmp_path / "my_pipeline.py").write_text(TOY + "\n\ndef silent(prediction, example):\n"
                                             "    pass\n")
    write_jsonl(tmp_path / "rows.jsonl",
                [{"qid": f"q{i}", "v": i + 1, "answer": 2 * (i + 1)} for i in range(12)])
    (tmp_path / "run.yaml").write_text(
        "system: my_pipeline:system\nmetric: my_pipeline:closeness\n"
        "data: {path: rows.jsonl, fields: {value: v, target: answer, id: qid}}\n"
        "split: {train: 4, val: 4, test: 4}\n"
        "budget: {iterations: 2, search_size: 3, fresh_inputs: 2, rollout_n: 0}\n"
        "backbone: hashing\n")
    return tmp_path


def test_optimize_a_users_system_and_metric_end_to_end(project):
    proc = cli(project, "optimize", "run.yaml", "--run-dir", "run")
    assert proc.returncode == 0, proc.stderr
    assert "data: rows.jsonl read as records mapped by data.fields" in shown(proc)
    assert "final configuration: scaler.factor=2" in shown(proc)  # the target is 2 x value
    with RunStore(project / "run", readonly=True) as store:
        result = store.get_meta("result")
        assert store.get_meta("run_config")["system"] == "my_pipeline:system"
    # factor 1 scores 1 / (1 + value) on test; factor 2 hits every target
    assert result["metric"] == "closeness" and result["after"] == 1.0 > result["before"]
    resumed = cli(project, "resume", "run")  # the stored config resolves the same code again
    assert resumed.returncode == 0, resumed.stderr
    assert "final configuration: scaler.factor=2" in shown(resumed)


def test_evaluate_takes_import_paths_where_it_takes_a_system_name(project):
    write_jsonl(project / "own.jsonl", [{"id": f"e{v}", "inputs": {"value": v}, "target": 2 * v}
                                        for v in (1, 3)])
    proc = cli(project, "evaluate", "my_pipeline:task", "--data", "own.jsonl", "--run-dir",
               "ev", "--json", "out.json")
    assert proc.returncode == 0, proc.stderr
    assert "read as coalign rows {id, inputs, target} (JSONL), 2 examples" in shown(proc)
    summary = json.loads((project / "out.json").read_text())
    assert summary["scores"] == {"e1": 0.5, "e3": 0.25}  # 1 / (1 + |v - 2v|)
    proc = cli(project, "evaluate", "my_pipeline:task", "--metric", "em", "--data",
               "own.jsonl", "--run-dir", "ev2", "--json", "out2.json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((project / "out2.json").read_text())["mean_reward"] == 0.0


@pytest.mark.parametrize("args, config, match", [
    (["evaluate", "my_pipeline:nope", "--data", "rows.jsonl"], None,
     "system 'my_pipeline:nope': module my_pipeline has no attribute 'nope'"),
    (["evaluate", "not_here:build"], None, "system 'not_here:build': no module named 'not_here'"),
    (["optimize", "bad.yaml"], "system: my_pipeline:system\nmetric: my_pipeline:silent\n"
     "data: {path: rows.jsonl, fields: {value: v, target: answer}}\n",
     "metric 'my_pipeline:silent' returned None (NoneType) for example '0'"),
    (["optimize", "bad.yaml"], "system: my_pipeline:system\n"
     "data: {path: rows.jsonl, fields: {value: v, target: answer}}\n",
     "system 'my_pipeline:system' returned a System, expected a coalign.task.Task (a System "
     "needs a metric"),
    (["optimize", "bad.yaml"], "system: my_pipeline:task\n"
     "data: {path: rows.jsonl, fields: {value: nope, target: answer}}\n",
     "rows.jsonl line 1: field 'nope' missing (data.fields maps 'value' to 'nope'"),
])
def test_bad_user_code_or_data_is_one_line_and_writes_nothing(project, args, config, match):
    if config is not None:
        (project / "bad.yaml").write_text(config + "split: {train: 4, val: 4, test: 4}\n")
    err = one_line_error(cli(project, *args, "--run-dir", "out"))
    assert match in err
    assert not (project / "out").exists()


def test_evaluate_names_the_input_a_hotpotqa_file_lacks_for_another_system(shared_data,
                                                                           tmp_path):
    write_jsonl(tmp_path / "hotpotqa_distractor.jsonl",
                [to_hf(r) for r in official_hotpot(shared_data, 2)])
    err = one_line_error(cli(tmp_path, "evaluate", "pubmedqa_select", "--data",
                             "hotpotqa_distractor.jsonl", "--run-dir", "out"))
    assert "system 'pubmedqa_select' needs input 'contexts', missing from example" in err
    assert not (tmp_path / "out").exists()
    (tmp_path / "notes.jsonl").write_text('{"title": "x"}\n')
    err = one_line_error(cli(tmp_path, "evaluate", "multihop_qa", "--data", "notes.jsonl",
                             "--run-dir", "out"))
    assert "notes.jsonl: no known dataset format (its first record has fields ['title'])" in err


@pytest.mark.llm
def test_evaluate_multihop_qa_on_the_hf_hotpotqa_file(shared_data, tmp_path):
    rows = official_hotpot(shared_data, 2)
    write_jsonl(tmp_path / "hotpotqa_distractor.jsonl", [to_hf(r) for r in rows])
    proc = cli(tmp_path, "evaluate", "multihop_qa", "--data", "hotpotqa_distractor.jsonl",
               "--limit", "2", "--model", "smollm2-135m", "--workers", "1", "--run-dir", "run",
               "--json", "out.json", timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert ("hotpotqa_distractor.jsonl read as HotpotQA, Hugging Face datasets rows (JSONL), 2 "
            "examples") in shown(proc)
    summary = json.loads((tmp_path / "out.json").read_text())
    assert set(summary["scores"]) == {r["_id"] for r in rows}
    assert summary["llm_calls"] == 6  # rewriter, extractor, answer writer per question
    assert all(0.0 <= s <= 1.0 for s in summary["scores"].values())


KIND = '''
from coalign.optimize import ExpChoiceOptimizer, ParamKind
from coalign.params import Choice
from coalign.rollouts import RolloutSpec


class Factor(Choice):
    """A param kind of the user's own: a Choice the loop knows only through its entry."""

    kind = "factor"


FACTOR = ParamKind(
    "factor", {"exp": lambda s: ExpChoiceOptimizer(s.tau)}, default="exp",
    rollouts=lambda ask: [RolloutSpec(param=ask.name, alternatives=tuple(ask.param.options))],
    finite_values=lambda p: tuple(p.options))
'''


def test_a_kind_registered_by_import_path_runs_through_coalign_optimize(project):
    """A system whose param has a kind of the user's own runs from a run config that
    registers the kind (``kinds:``); without it, one line names the missing kind."""
    (project / "my_kinds.py").write_text(KIND)
    (project / "my_pipeline.py").write_text(
        TOY.replace("from coalign.params import Choice", "from my_kinds import Factor")
        .replace("Choice([1, 2, 3], 1)", "Factor([1, 2, 3], 1)"))
    config = (project / "run.yaml").read_text()
    (project / "kind.yaml").write_text(config + "kinds: [my_kinds:FACTOR]\n"
                                       "optimizers: {factor: exp}\n")
    proc = cli(project, "optimize", "kind.yaml", "--run-dir", "run")
    assert proc.returncode == 0, proc.stderr
    assert "final configuration: scaler.factor=2" in shown(proc)
    assert "param kind 'factor' is not registered" in one_line_error(
        cli(project, "optimize", "run.yaml", "--run-dir", "unregistered"))
    (project / "bad.yaml").write_text(config + "kinds: [my_kinds:Factor]\n")
    assert "kinds: my_kinds:Factor is a type, expected a coalign.optimize.ParamKind" in \
        one_line_error(cli(project, "optimize", "bad.yaml", "--run-dir", "bad"))
    assert not (project / "unregistered").exists() and not (project / "bad").exists()
