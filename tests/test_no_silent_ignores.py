"""No setting is dropped without a word (issue 41): on the command line a setting that does not
apply is refused in one line or noted in one line, and ``coalign evaluate`` reads any JSONL
through ``--fields``. Everything runs the real command on replay tables, a user's module or a
real local OpenAI-compatible server: no LLM."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from coalign.job import Job, parse_run_config
from coalign.store import RunStore
from tests.endpoint_server import FaultServer
from tests.test_bring_your_own import cli, one_line_error, shown
from tests.test_data_formats import write_jsonl
from tests.test_imports import TOY

TABLE = Path(__file__).parent / "fixtures" / "tables" / "multihop_qa_8q"
REPLAY = f"replay:{TABLE}"
# a small loop on the replay fixture (8 hotpotqa questions), quick with the hashing backbone
RUN = ("system: multihop_qa\ndata: hotpotqa\nbackbone: hashing\n"
       "split: {train: 2, val: 2, test: 2}\nbudget: {iterations: 1, rollout_n: 0}\n")


def notes(proc: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in proc.stderr.splitlines() if ln.startswith("note: ")]


def export_file(path: Path, lm: str | None, model: str = "qwen2.5-0.5b") -> Path:
    """A file as ``coalign export`` writes it, of an unoptimized multihop_qa."""
    path.write_text(json.dumps({"format": "coalign-system", "version": 1,
                                "system": "multihop_qa", "model": model, "lm": lm,
                                "config": {}, "selectors": {}}))
    return path


def scores(path: Path) -> dict[str, float]:
    return json.loads(path.read_text())["scores"]


def evaluate(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return cli(tmp, "evaluate", "multihop_qa", "--data", "hotpotqa", "--limit", "2", *args)


# --- 1. evaluate --config uses the exported lm (and model) -------------------------------------


def test_evaluate_config_replays_on_the_exported_lm(tmp_path):
    system = export_file(tmp_path / "system.json", REPLAY)
    replayed = evaluate(tmp_path, "--config", str(system), "--run-dir", "a", "--json", "a.json")
    assert replayed.returncode == 0, replayed.stderr
    assert notes(replayed) == [f"note: evaluating on {REPLAY}, the lm of the exported system "
                               f"{system} (--lm live calls the system's models)"]
    direct = evaluate(tmp_path, "--lm", REPLAY, "--run-dir", "b", "--json", "b.json")
    assert direct.returncode == 0, direct.stderr
    assert scores(tmp_path / "a.json") == scores(tmp_path / "b.json")
    # --lm wins, and says so; another copy of the table answers alike
    other = shutil.copytree(TABLE, tmp_path / "copy")
    flagged = evaluate(tmp_path, "--config", str(system), "--lm", f"replay:{other}",
                       "--run-dir", "c", "--json", "c.json")
    assert flagged.returncode == 0, flagged.stderr
    assert notes(flagged) == [f"note: --lm replay:{other} overrides the lm of the exported "
                              f"system {system} ({REPLAY})"]
    assert scores(tmp_path / "c.json") == scores(tmp_path / "a.json")
    bogus = export_file(tmp_path / "bogus.json", "table")
    err = one_line_error(evaluate(tmp_path, "--config", str(bogus), "--run-dir", "d"))
    assert f"config file {bogus}: lm 'table': expected replay:DIR or null" in err


@pytest.mark.server
def test_evaluate_config_calls_the_exported_model_and_lm_live_overrides_a_replay(tmp_path):
    with FaultServer() as server:
        model = f"openai:m@{server.url}"
        live = export_file(tmp_path / "live.json", None, model)
        proc = cli(tmp_path, "evaluate", "multihop_qa", "--limit", "1", "--config", str(live),
                   "--run-dir", "a")
        assert proc.returncode == 0, proc.stderr
        assert len(server.bodies) == 3 and notes(proc) == []  # three LLM steps, all served here
        replayed = export_file(tmp_path / "replayed.json", REPLAY, model)
        proc = cli(tmp_path, "evaluate", "multihop_qa", "--limit", "1", "--config",
                   str(replayed), "--lm", "live", "--run-dir", "b")
        assert proc.returncode == 0, proc.stderr
        assert len(server.bodies) == 6
        assert notes(proc) == [f"note: --lm live overrides the lm of the exported system "
                               f"{replayed} ({REPLAY})"]
    err = one_line_error(cli(tmp_path, "evaluate", "multihop_qa", "--lm", "table"))
    assert "--lm 'table': expected replay:DIR (a replay table) or live" in err


# --- 2. optimize --lm ----------------------------------------------------------------------


def test_optimize_lm_sets_the_run_configs_lm_and_notes_an_override(tmp_path):
    other = shutil.copytree(TABLE, tmp_path / "copy")
    (tmp_path / "run.yaml").write_text(RUN + f"lm: {REPLAY}\n")
    proc = cli(tmp_path, "optimize", "run.yaml", "--lm", f"replay:{other}", "--run-dir", "run")
    assert proc.returncode == 0, proc.stderr
    assert notes(proc) == [f"note: --lm replay:{other} overrides the lm of run config run.yaml "
                           f"({REPLAY})"]
    with RunStore(tmp_path / "run", readonly=True) as store:
        assert store.get_meta("run_config")["lm"] == f"replay:{other}"
    err = one_line_error(cli(tmp_path, "optimize", "run.yaml", "--lm", str(other),
                             "--run-dir", "bad"))
    assert "expected replay:DIR (a replay table) or live" in err
    assert not (tmp_path / "bad").exists()


# --- 3. --ray (and the other model-call settings) on replay ------------------------------------


@pytest.mark.parametrize("args, run_config, match", [
    (["evaluate", "multihop_qa", "--lm", REPLAY, "--ray", "local"], None,
     f"--ray is not used with lm {REPLAY}: a replay table answers every model call here"),
    (["evaluate", "multihop_qa", "--config", "system.json", "--ray", "local", "--timeout", "5"],
     None, f"--ray and --timeout are not used with lm {REPLAY}"),
    (["evaluate", "multihop_qa", "--lm", REPLAY, "--model", "smollm2-135m"], None,
     f"--model is not used with lm {REPLAY}"),
    (["optimize", "run.yaml", "--ray", "local"], f"lm: {REPLAY}\n",
     f"--ray is not used with lm {REPLAY}: a replay table answers every model call here"),
    (["optimize", "run.yaml", "--lm", REPLAY, "--concurrency", "2"], "",
     f"--concurrency is not used with lm {REPLAY}"),
    (["optimize", "run.yaml"], f"lm: {REPLAY}\nexecutor: {{ray: local}}\n",
     f"run config field 'executor.ray' is not used with lm {REPLAY}"),
    (["optimize", "run.yaml"], f"lm: {REPLAY}\nmodel: smollm2-135m\nendpoint: {{timeout_s: 3}}\n",
     f"run config fields 'model' and 'endpoint' are not used with lm {REPLAY}"),
])
def test_settings_replay_cannot_use_are_refused_in_one_line(tmp_path, args, run_config, match):
    export_file(tmp_path / "system.json", REPLAY)
    if run_config is not None:
        (tmp_path / "run.yaml").write_text(RUN + run_config)
    err = one_line_error(cli(tmp_path, *args, "--run-dir", "out"))
    assert match in err
    assert not (tmp_path / "out").exists()


def test_resume_of_a_replay_run_with_a_stored_ray_address_drops_it_with_a_note(tmp_path):
    # a run dir made before --ray was refused on replay: its stored config names a cluster
    cfg = parse_run_config({"system": "multihop_qa", "data": "hotpotqa", "lm": REPLAY,
                            "backbone": "hashing", "split": {"train": 2, "val": 2, "test": 2},
                            "budget": {"iterations": 1, "rollout_n": 0},
                            "executor": {"ray": "local"}})
    Job.open(cfg, tmp_path / "run").store.close()
    proc = cli(tmp_path, "resume", "run")
    assert proc.returncode == 0, proc.stderr
    assert notes(proc) == [f"note: ignoring the run's stored 'executor.ray': not used with lm "
                           f"{REPLAY} (a replay table answers every model call here: no model "
                           "is loaded or called)"]
    err = one_line_error(cli(tmp_path, "resume", "run", "--ray", "auto"))
    assert f"--ray is not used with lm {REPLAY}" in err


# --- 4. table build --level defaults to greedy ---------------------------------------------


def test_table_build_defaults_to_the_greedy_level(tmp_path):
    table = shutil.copytree(TABLE, tmp_path / "t")  # complete at greedy, 1/8 at samples
    proc = cli(tmp_path, "table", "build", str(table))
    assert proc.returncode == 0, proc.stderr
    assert "built 0 question(s) now, 0 LLM calls" in proc.stdout and "8/8 done" in proc.stdout
    err = one_line_error(cli(tmp_path, "table", "build", str(table), "--workers", "3"))
    assert "--workers sets the Ray actors per model and needs --ray" in err


# --- 5. settings of no effect elsewhere: endpoint settings without an endpoint model, an
# executor block without Ray -----------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's module (a system with no LLM) and their rows in their own layout."""
    (tmp_path / "my_pipeline.py").write_text(TOY)
    write_jsonl(tmp_path / "rows.jsonl",
                [{"qid": f"q{i}", "v": i + 1, "answer": 2 * (i + 1)} for i in range(6)])
    return tmp_path


def test_endpoint_settings_without_an_endpoint_model_are_noted(project):
    proc = cli(project, "evaluate", "my_pipeline:task", "--data", "rows.jsonl", "--fields",
               "value=v,target=answer", "--timeout", "5", "--run-dir", "ev")
    assert proc.returncode == 0, proc.stderr
    assert notes(proc) == ["note: --timeout, --retries and --concurrency apply to endpoint "
                           "(openai:) models only; this run calls none (it calls no model)"]
    (project / "run.yaml").write_text(
        "system: my_pipeline:task\ndata: {path: rows.jsonl, fields: {value: v, target: answer}}\n"
        "split: {train: 2, val: 2, test: 2}\nbudget: {iterations: 1, rollout_n: 0}\n"
        "backbone: hashing\nexecutor: {workers: 3}\n")
    proc = cli(project, "optimize", "run.yaml", "--retries", "2", "--run-dir", "run")
    assert proc.returncode == 0, proc.stderr
    assert [n.split(";")[0] for n in notes(proc)] == [
        "note: the run config's executor settings apply to Ray actors only",
        "note: endpoint settings (--timeout, --retries, --concurrency, endpoint:) apply to "
        "endpoint (openai:) models only"]


# --- B. evaluate --fields: any JSONL -------------------------------------------------------


def test_evaluate_reads_any_jsonl_through_fields(project):
    proc = cli(project, "evaluate", "my_pipeline:task", "--data", "rows.jsonl", "--fields",
               "value=v, target=answer, id=qid", "--limit", "3", "--run-dir", "ev",
               "--json", "out.json")
    assert proc.returncode == 0, proc.stderr
    assert "data: rows.jsonl read as records mapped by --fields, 3 examples" in shown(proc)
    assert scores(project / "out.json") == {"q0": 0.5, "q1": 1 / 3, "q2": 0.25}  # 1/(1+v)


ROWS = ["--data", "rows.jsonl"]


@pytest.mark.parametrize("args, match", [
    (ROWS, "rows.jsonl: no known dataset format (its first record has fields ['answer', "
           "'qid', 'v']); expected coalign rows {id, inputs, target}, HotpotQA/2WikiMultiHopQA, "
           "MuSiQue, PubMedQA, MBPP or HumanEval records, or any JSONL mapped by --fields "
           "NAME=KEY,... (e.g. question=q,target=answer)"),
    ([*ROWS, "--fields", "value:v"], "--fields 'value:v': expected NAME=KEY pairs separated "
                                     "by commas"),
    ([*ROWS, "--fields", "value=v"], "--fields 'value=v': map target to the row key holding"),
    ([*ROWS, "--fields", "value=v,value=answer"], "'value' is mapped twice"),
    ([*ROWS, "--fields", "target=answer"], "map at least one system input to a row key, e.g. "
                                           "question=q"),
    ([*ROWS, "--fields", "value=v,size=v,target=answer"],
     "--fields maps 'size', which system 'toy_scale' does not read; its inputs are ['value']"),
    ([*ROWS, "--fields", "value=nope,target=answer"],
     "rows.jsonl line 1: field 'nope' missing (--fields maps 'value' to 'nope'"),
    (["--data", "own.jsonl"], "system 'toy_scale' needs input 'value', missing from example "
                              "'e1' (it has ['x']); use data that has it or map a row field to "
                              "it (--data FILE --fields value=KEY,...)"),
])
def test_data_errors_suggest_the_fields_flag_in_one_line(project, args, match):
    write_jsonl(project / "own.jsonl", [{"id": "e1", "inputs": {"x": 1}, "target": 2}])
    err = one_line_error(cli(project, "evaluate", "my_pipeline:task", *args, "--run-dir",
                             "out"))
    assert match in err
    assert "data: {path" not in err and "data.fields" not in err
    assert not (project / "out").exists()


def test_fields_need_a_file(project):
    err = one_line_error(cli(project, "evaluate", "multihop_qa", "--data", "world", "--fields",
                             "question=q,target=a", "--run-dir", "out"))
    assert "--fields maps the rows of a JSONL file; --data world is a named dataset" in err
