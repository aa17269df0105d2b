"""MLflow tracking (issue 24, item 1), read back with ``MlflowClient`` from a local SQLite
tracking store: params, a metric per ledger step, the outcome, artifacts; a killed run resumed
into the same MLflow run with each step logged once. The system is the user-module toy of
``test_imports`` (no LLM, hashing backbone): the run takes seconds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coalign.errors import ConfigError, TrackingError
from coalign.job import parse_run_config
from coalign.store import RunStore
from coalign.tracking import TRACKERS, MLflowTracker, TrackingSpec, flat_params, step_metrics
from tests.test_data_formats import write_jsonl
from tests.test_imports import TOY

pytest.importorskip("mlflow", reason="the mlflow extra: pip install 'coalign[mlflow]'")
from mlflow.tracking import MlflowClient  # noqa: E402

# MLflow's SQLite store on SQLAlchemy 2.1: a deprecation inside MLflow, nothing of ours
pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy")

COALIGN = str(Path(sys.executable).parent / "coalign")
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


def mlflow_run_id(run_dir: Path) -> str:
    with RunStore(run_dir, readonly=True) as store:
        return store.get_meta("tracking")["mlflow"]["run_id"]


def history(client: MlflowClient, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def test_optimize_reads_back_from_mlflow(tmp_path, tracking):
    """The must-show: `coalign optimize --mlflow URI`, then the run as MLflow holds it."""
    uri, client = tracking
    (tmp_path / "my_pipeline.py").write_text(TOY)
    (tmp_path / "run.yaml").write_text(json.dumps(toy_project(tmp_path, "my_pipeline")))
    proc = subprocess.run([COALIGN, "optimize", "run.yaml", "--run-dir", "run", "--mlflow", uri],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = client.get_run(run_id := mlflow_run_id(tmp_path / "run"))
    assert run.info.status == "FINISHED" and run.info.run_name == "run"
    # params: the run config flattened, without where it is tracked or how endpoints are called
    params = run.data.params
    assert params["system"] == "my_pipeline:system" and params["split.train"] == "4"
    assert params["budget.iterations"] == "2" and params["data.fields.target"] == "answer"
    assert params["proposer"] == "null" and not any(
        k.startswith(("tracking", "endpoint")) for k in params)
    assert run.data.tags["coalign.system"] == "my_pipeline:system"
    # a metric per ledger step, equal to what the run store holds
    with RunStore(tmp_path / "run", readonly=True) as store:
        steps, result = store.steps(), store.get_meta("result")
    assert [t for t, _, _ in steps] == [0, 1]
    for key in ("val_score", "accepted", "equivalent_runs", "llm_calls"):
        assert history(client, run_id, key) == [
            (t, pytest.approx(step_metrics(state, rec)[key])) for t, state, rec in steps]
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
    # artifacts: the report, the step ledger and the exported final config
    names = {a.path for a in client.list_artifacts(run_id)}
    assert {"report.html", "steps.json", "system.json"} <= names
    local = Path(client.download_artifacts(run_id, "", str(tmp_path / "got")))
    ledger = json.loads((local / "steps.json").read_text())
    assert [(r["step"], r["state"]) for r in ledger] == [(t, st) for t, st, _ in steps]
    assert json.loads((local / "system.json").read_text())["config"] == {"scaler": {"factor": 2}}
    assert "<html" in (local / "report.html").read_text().lower()


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


def test_flat_params():
    assert flat_params({"a": {"b": 1, "c": [1, 2]}, "d": None, "e": "text", "f": {}}) == {
        "a.b": "1", "a.c": "[1, 2]", "d": "null", "e": "text", "f": "{}"}
