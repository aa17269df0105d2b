"""MLflow tracking (issue 24, item 1; issue 41), read back with ``MlflowClient`` from a local
SQLite tracking store: params (no "null"), the start score and a metric per ledger step, the
outcome, the prompts in MLflow's prompt registry, artifacts; a killed run resumed into the same
MLflow run with each step logged once; ``--mlflow`` alone and ``file:`` stores. The system is
the user-module toy of ``test_imports`` (no LLM, hashing backbone), here with a prompt (a Text
param with fixed candidates, so no LLM writes one): the run takes seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coalign.errors import ConfigError, TrackingError
from coalign.job import parse_run_config
from coalign.store import RunStore
from coalign.tracking import (
    TRACKERS,
    MLflowTracker,
    TrackingSpec,
    default_tracking_uri,
    flat_params,
    step_metrics,
)
from coalign.tracking._mlflow import LINKED_PROMPTS, _one_line
from tests.test_data_formats import write_jsonl
from tests.test_imports import TOY

pytest.importorskip("mlflow", reason="the mlflow extra: pip install 'coalign[mlflow]'")
from mlflow.tracking import MlflowClient  # noqa: E402

# MLflow's SQLite store on SQLAlchemy 2.1: a deprecation inside MLflow, nothing of ours
pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy")

COALIGN = str(Path(sys.executable).parent / "coalign")
START_PROMPT = "Double the value."
# the toy with a prompt beside its factor: the prompt the run starts from is logged
PROMPT_TOY = TOY.replace(
    "from coalign.params import Choice", "from coalign.params import Choice, Text").replace(
    'params={"factor": Choice([1, 2, 3], 1)}',
    'params={"factor": Choice([1, 2, 3], 1), "prompt": Text('
    f'{START_PROMPT!r}, candidates=[{START_PROMPT!r}, "Triple it."])}}')
assert "Text(" in PROMPT_TOY
RUN = {"split": {"train": 4, "val": 4, "test": 4},
       "budget": {"iterations": 2, "search_size": 3, "fresh_inputs": 2, "rollout_n": 0},
       "backbone": "hashing"}


@pytest.fixture(scope="module")
def tracking(tmp_path_factory) -> tuple[str, MlflowClient]:
    """One SQLite tracking store for the module (creating its schema takes seconds), with the
    experiment's artifacts under tmp, not in the working directory MLflow defaults to."""
    root = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = MlflowClient(uri)
    client.create_experiment("coalign", artifact_location=str(root / "artifacts"))
    return uri, client


def toy_project(folder: Path, module: str) -> dict:
    """Data rows for the toy (target = 2 x value) and a run config over ``module``."""
    write_jsonl(folder / "rows.jsonl",
                [{"qid": f"q{i}", "v": i + 1, "answer": 2 * (i + 1)} for i in range(12)])
    return {"system": f"{module}:system", "metric": f"{module}:closeness",
            "data": {"path": "rows.jsonl", "fields": {"value": "v", "target": "answer",
                                                      "id": "qid"}}, **RUN}


def optimize(folder: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`coalign optimize run.yaml ARGS` in ``folder`` (the user's folder), which must pass."""
    proc = subprocess.run([COALIGN, "optimize", "run.yaml", *args], capture_output=True,
                          text=True, cwd=folder, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def prompt_project(folder: Path, module: str = "my_pipeline") -> None:
    (folder / f"{module}.py").write_text(PROMPT_TOY)
    (folder / "run.yaml").write_text(json.dumps(toy_project(folder, module)))


def linked_prompts(client: MlflowClient, run) -> dict[str, str]:
    """The run's linked prompt versions (as MLflow's UI reads them): name -> template."""
    return {e["name"]: client.get_prompt_version(e["name"], e["version"]).template
            for e in json.loads(run.data.tags[LINKED_PROMPTS])}


def mlflow_run_id(run_dir: Path) -> str:
    with RunStore(run_dir, readonly=True) as store:
        return store.get_meta("tracking")["mlflow"]["run_id"]


def history(client: MlflowClient, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def test_optimize_reads_back_from_mlflow(tmp_path, tracking):
    """The must-show: `coalign optimize --mlflow URI`, then the run as MLflow holds it."""
    uri, client = tracking
    prompt_project(tmp_path)
    optimize(tmp_path, "--run-dir", "run", "--mlflow", uri)
    run = client.get_run(run_id := mlflow_run_id(tmp_path / "run"))
    assert run.info.status == "FINISHED" and run.info.run_name == "run"
    # params: the run config flattened, without where it is tracked or how endpoints are called
    params = run.data.params
    assert params["system"] == "my_pipeline:system" and params["split.train"] == "4"
    assert params["budget.iterations"] == "2" and params["data.fields.target"] == "answer"
    assert "proposer" not in params and "cost_cap" not in params  # unset: absent, not "null"
    assert "null" not in params.values() and "lm" not in params
    assert not any(k.startswith(("tracking", "endpoint")) for k in params)
    assert run.data.tags["coalign.system"] == "my_pipeline:system"
    # a metric per ledger step, equal to what the run store holds
    with RunStore(tmp_path / "run", readonly=True) as store:
        steps, result = store.steps(), store.get_meta("result")
    assert [t for t, _, _ in steps] == [0, 1]
    for key in ("val_score", "accepted", "equivalent_runs", "llm_calls"):
        assert history(client, run_id, key) == [
            (t, pytest.approx(step_metrics(state, rec)[key])) for t, state, rec in steps]
    # the starting config's validation score, beside step 0's
    assert history(client, run_id, "val_start") == [(0, pytest.approx(steps[0][2]["val_before"]))]
    assert run.data.metrics["val_start"] < history(client, run_id, "val_score")[-1][1]
    runs = [v for _, v in history(client, run_id, "equivalent_runs")]
    assert runs == sorted(runs) and runs[0] > 0  # equivalent runs so far: never decreasing
    assert history(client, run_id, "llm_calls") == [(0, 0.0), (1, 0.0)]  # a toy: no LLM
    # the outcome: test metric and the cost ledger (validation is where a toy spends)
    final = run.data.metrics
    assert final["test.after"] == result["after"] == 1.0 > final["test.before"]
    assert final["cost.validation.equivalent_runs"] > 0
    phases = {k: v for k, v in final.items()
              if k.startswith("cost.") and k.endswith(".equivalent_runs") and ".total." not in k}
    assert final["cost.total.equivalent_runs"] == pytest.approx(sum(phases.values()))
    # the prompt, as a version in MLflow's prompt registry linked to the run (unchanged by
    # the run: start and final are the same version)
    assert linked_prompts(client, run) == {"my_pipeline_system.scaler.prompt": START_PROMPT}
    # artifacts: the report, the step ledger, the exported final config and the prompts
    names = {a.path for a in client.list_artifacts(run_id)}
    assert {"report.html", "steps.json", "system.json", "prompts.json"} <= names
    local = Path(client.download_artifacts(run_id, "", str(tmp_path / "got")))
    ledger = json.loads((local / "steps.json").read_text())
    assert [(r["step"], r["state"]) for r in ledger] == [(t, st) for t, st, _ in steps]
    assert json.loads((local / "system.json").read_text())["config"] == {"scaler": {
        "factor": 2, "prompt": {"instruction": START_PROMPT, "demos": []}}}
    assert "<html" in (local / "report.html").read_text().lower()
    value = {"instruction": START_PROMPT, "demos": []}
    assert json.loads((local / "prompts.json").read_text()) == {
        "scaler.prompt": {"start": value, "final": value}}


def test_a_killed_run_resumes_into_the_same_mlflow_run(tmp_path, tracking, monkeypatch):
    """Killed after step 1 reached the run store but before it reached MLflow: `resume`
    continues the same MLflow run and logs step 1, and step 0 is not logged twice."""
    from coalign.cli import _optimize
    from coalign.job import Job, resume_config

    uri, client = tracking
    monkeypatch.chdir(tmp_path)  # the user's folder: coalign imports their module from here
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "tracked_toy.py").write_text(TOY)
    raw = toy_project(tmp_path, "tracked_toy") | {"tracking": {"mlflow": uri}}
    run_dir = tmp_path / "run"
    opened: list[Job] = []
    real_open = Job.open
    monkeypatch.setattr(Job, "open", lambda cfg, d: opened.append(real_open(cfg, d)) or opened[-1])

    def killed_at_step_1(rec):
        if rec.step == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(_optimize, "_show_step", killed_at_step_1)
    with pytest.raises(KeyboardInterrupt):
        _optimize.run_job(parse_run_config(raw), run_dir)
    opened[0].store.close()  # as the killed process would have
    run_id = mlflow_run_id(run_dir)
    assert client.get_run(run_id).info.status == "KILLED"
    assert [t for t, _ in history(client, run_id, "val_score")] == [0]
    assert "test.after" not in client.get_run(run_id).data.metrics

    monkeypatch.setattr(_optimize, "_show_step", lambda rec: None)
    _optimize.run_job(resume_config(run_dir), run_dir)  # `coalign resume`: the stored config
    assert mlflow_run_id(run_dir) == run_id
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.metrics["test.after"] == 1.0
    for key in ("val_score", "accepted", "equivalent_runs"):
        assert [t for t, _ in history(client, run_id, key)] == [0, 1]  # each step once
    assert "steps.json" in {a.path for a in client.list_artifacts(run_id)}


def test_tracking_settings_are_outside_the_digest_and_redacted():
    plain = parse_run_config({"budget": {"iterations": 2}})
    tracked = parse_run_config({"budget": {"iterations": 2},
                                "tracking": {"mlflow": "http://user:key@mlflow.example:5000"}})
    assert plain.digest == tracked.digest  # tracking can be added to an existing run dir
    assert tracked.redacted().tracking.mlflow == "http://mlflow.example:5000"
    with pytest.raises(ConfigError, match="field 'tracking.wandb'"):
        parse_run_config({"tracking": {"wandb": "x"}})
    # each tracker is a field of the tracking block
    assert set(TRACKERS) <= set(TrackingSpec.model_fields)


def test_missing_mlflow_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow.tracking", None)  # as if not installed
    with pytest.raises(ConfigError, match=r"pip install 'coalign\[mlflow\]'$"):
        MLflowTracker("sqlite:///unused.db")


def test_an_unknown_tracking_uri_is_one_line():
    with pytest.raises(TrackingError, match=r"^MLflow at nosuch://x: ") as info:
        MLflowTracker("nosuch://x")
    assert "\n" not in str(info.value)


def test_flat_params_leave_unset_settings_out():
    assert flat_params({"a": {"b": 1, "c": [1, None], "n": None}, "d": None, "e": "text",
                        "f": {}, "g": {"h": None}}) == {
        "a.b": "1", "a.c": "[1, null]", "e": "text", "f": "{}"}


# -- issue 41: `--mlflow` alone, file: stores, whole error lines, prompts ----------------------

def without(*names: str) -> dict[str, str]:
    """This process's environment without ``names`` (for a `coalign` subprocess)."""
    return {k: v for k, v in os.environ.items() if k not in names}


@pytest.mark.parametrize("args, expected", [
    (["--mlflow"], "DEFAULT"),  # alone, last
    (["--mlflow", "--run-dir", "elsewhere"], "DEFAULT"),  # alone, before another option
    (["--mlflow", "default"], "DEFAULT"),
    (["--mlflow", "sqlite:///given.db"], "sqlite:///given.db"),  # the URI form as before
    (["--mlflow=http://127.0.0.1:5000"], "http://127.0.0.1:5000"),
    ([], None),
])
def test_mlflow_option_with_and_without_a_value(args, expected, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from coalign.cli import _optimize, app

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    (tmp_path / "run.yaml").write_text(json.dumps({"budget": {"iterations": 1}}))
    seen = []
    monkeypatch.setattr(_optimize, "run_job", lambda cfg, *a, **k: seen.append(cfg))
    result = CliRunner().invoke(app, ["optimize", "run.yaml", *args])
    assert result.exit_code == 0, result.output
    default = f"sqlite:///{tmp_path.resolve() / 'mlflow.db'}"  # absolute: resume finds it
    assert seen[0].tracking.mlflow == (default if expected == "DEFAULT" else expected)


def test_default_tracking_uri_follows_mlflow(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert default_tracking_uri(tmp_path) == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.example:5000")
    assert default_tracking_uri(tmp_path) == "http://mlflow.example:5000"
    # a config's `tracking: {mlflow: default}` reaches the tracker unresolved: resolved there
    assert MLflowTracker("default").target == "http://mlflow.example:5000"


def test_mlflow_alone_tracks_to_mlflow_db_in_the_current_folder(tmp_path):
    """`coalign optimize run.yaml --mlflow`: MLflow's own default store, ./mlflow.db (what
    `mlflow ui` in that folder shows), stored absolute with the run config."""
    prompt_project(tmp_path)
    optimize(tmp_path, "--mlflow", "--run-dir", "run", env=without("MLFLOW_TRACKING_URI"))
    uri = f"sqlite:///{tmp_path.resolve() / 'mlflow.db'}"
    assert (tmp_path / "mlflow.db").is_file()
    with RunStore(tmp_path / "run", readonly=True) as store:
        assert store.get_meta("run_config")["tracking"]["mlflow"] == uri
        assert store.get_meta("tracking")["mlflow"]["target"] == uri
        val_start = store.steps()[0][2]["val_before"]
    client = MlflowClient(uri)
    run = client.get_run(mlflow_run_id(tmp_path / "run"))
    assert run.info.status == "FINISHED" and run.data.metrics["val_start"] == val_start
    assert "report.html" in {a.path for a in client.list_artifacts(run.info.run_id)}


def test_a_file_store_uri_works(tmp_path, monkeypatch):
    """`--mlflow file:DIR`: MLflow 3 refuses its file store unless MLFLOW_ALLOW_FILE_STORE is
    true; naming one is the opt-in (set only while coalign talks to it)."""
    prompt_project(tmp_path)
    optimize(tmp_path, "--run-dir", "run", "--mlflow", "file:fs",
             env=without("MLFLOW_ALLOW_FILE_STORE"))
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # for the reader here
    client = MlflowClient(f"file:{tmp_path / 'fs'}")
    run = client.get_run(mlflow_run_id(tmp_path / "run"))
    assert run.info.status == "FINISHED" and run.data.metrics["test.after"] == 1.0
    assert "val_start" in run.data.metrics and "system.json" in {
        a.path for a in client.list_artifacts(run.info.run_id)}
    assert linked_prompts(client, run) == {"my_pipeline_system.scaler.prompt": START_PROMPT}


def test_a_file_store_opt_in_does_not_leak(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    tracker = MLflowTracker(f"file:{tmp_path / 'fs'}")
    tracker.open(None, "run", {"a": "1"}, {})
    tracker.log({"val_score": 0.5}, step=0)
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ


def test_a_refused_file_store_keeps_mlflows_fix_on_one_line(tmp_path, monkeypatch):
    """The environment said no: MLflow's refusal, on one line, with its fix sentence."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "false")
    with pytest.raises(TrackingError) as info:
        MLflowTracker(f"file:{tmp_path / 'fs'}").open(None, "run", {}, {})
    text = str(info.value)
    assert text.startswith(f"MLflow at file:{tmp_path / 'fs'}: The filesystem tracking backend")
    assert "set `MLFLOW_ALLOW_FILE_STORE=true` to opt out" in text and "\n" not in text


def test_one_line_keeps_the_fix_of_a_long_message():
    long = ("The store is gone. " + "It was here once and then it was not. " * 12
            + "\nTraceback line\nTo fix it, set `STORE=on` and try again.")
    line = _one_line(long)
    assert "\n" not in line and len(line) <= 400
    assert line.startswith("The store is gone.") and line.endswith(
        " … To fix it, set `STORE=on` and try again.")
    assert _one_line("Short.\nSecond line.") == "Short. Second line."


def test_prompts_go_to_the_registry_once(tracking):
    """A changed prompt: a start and a final version, both linked to the run; logging again
    (a resumed run finishing) adds none, and a new run from the same start reuses it."""
    uri, client = tracking
    start = {"instruction": "Answer.", "demos": []}
    final = {"instruction": "Answer in one word.", "demos": [{"q": "2+2?", "a": "4"}]}
    prompts = {"qa:system.writer.prompt": {"start": start, "final": final}}
    tracker = MLflowTracker(uri)
    run_id, _ = tracker.open(None, "prompted", {}, {})
    tracker.log_prompts(prompts)
    tracker.log_prompts(prompts)
    name = "qa_system.writer.prompt"
    versions = sorted(client.search_prompt_versions(name), key=lambda v: int(v.version))
    assert [(v.version, v.template, v.tags["coalign.stage"]) for v in versions] == [
        (1, "Answer.", "start"), (2, "Answer in one word.", "final")]
    assert json.loads(versions[1].tags["coalign.demos"]) == final["demos"]
    assert json.loads(client.get_run(run_id).data.tags[LINKED_PROMPTS]) == [
        {"name": name, "version": "1"}, {"name": name, "version": "2"}]
    other = MLflowTracker(uri)
    other.open(None, "again", {}, {})
    other.log_prompts({"qa:system.writer.prompt": {"start": final, "final": final}})
    assert len(client.search_prompt_versions(name)) == 2  # the latest version, reused


def test_prompts_without_a_registry_become_run_tags(tracking, monkeypatch):
    from mlflow.exceptions import MlflowException

    uri, client = tracking
    tracker = MLflowTracker(uri)
    run_id, _ = tracker.open(None, "no-registry", {}, {})

    def refused(*args, **kwargs):
        raise MlflowException("Prompt registry is not supported by this store.")

    monkeypatch.setattr(tracker._client, "register_prompt", refused)
    tracker.log_prompts({"s.c.p": {"start": {"instruction": "A", "demos": []},
                                   "final": {"instruction": "B", "demos": []}}})
    tags = client.get_run(run_id).data.tags
    assert tags["coalign.prompt.s.c.p.start"] == "A" and tags["coalign.prompt.s.c.p.final"] == "B"
    assert tags["coalign.prompts"] == ("not in a prompt registry: Prompt registry is not "
                                       "supported by this store.")
    assert LINKED_PROMPTS not in tags


@pytest.mark.parametrize("args, expected", [
    (["--mlflow", "sqlite:///later.db"], "sqlite:///later.db"),  # tracking added on resume
    (["--mlflow"], "DEFAULT"),
    ([], "sqlite:///first.db"),  # the URI the run was started with
])
def test_resume_takes_an_mlflow_uri_too(args, expected, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from coalign.cli import _optimize, app
    from coalign.job import parse_run_config
    from coalign.store import RunStore

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    cfg = parse_run_config({"budget": {"iterations": 1},
                            "tracking": {"mlflow": "sqlite:///first.db"}}, "test")
    with RunStore(tmp_path / "run") as store:
        store.set_meta("run_config", cfg.redacted().model_dump())
    seen = []
    monkeypatch.setattr(_optimize, "run_job", lambda cfg, *a, **k: seen.append((cfg, k)))
    result = CliRunner().invoke(app, ["resume", "run", *args])
    assert result.exit_code == 0, result.output
    default = f"sqlite:///{tmp_path.resolve() / 'mlflow.db'}"
    assert seen[0][0].tracking.mlflow == (default if expected == "DEFAULT" else expected)
    assert seen[0][1] == {"stored": True, "cascade": 0}
    assert seen[0][0].digest == cfg.digest  # tracking is outside the digest: same run
