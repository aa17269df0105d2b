"""MLflow tracking against a real ``mlflow server`` (issue 41): the ``mlflow`` extra brings the
server, a run goes to ``http://127.0.0.1:PORT`` and is read back through the REST API only
(urllib, no MLflow client): params, the start score and the per-step metric, the outcome, the
linked prompt and the artifacts the server stores. A server that does not come up fails the
test with its log, it is not skipped."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from coalign.store import RunStore
from tests.test_tracking_mlflow import START_PROMPT, mlflow_run_id, optimize, prompt_project

pytest.importorskip("mlflow", reason="the mlflow extra: pip install 'coalign[mlflow]'")

pytestmark = [pytest.mark.server, pytest.mark.slow]

MLFLOW = str(Path(sys.executable).parent / "mlflow")
START_S = 240  # the server imports much of MLflow (and its GenAI deps) before it listens


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(base: str, path: str, **query: str) -> dict:
    url = f"{base}/api/2.0/mlflow/{path}?{urllib.parse.urlencode(query)}"
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.load(resp)


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    """`mlflow server` on a SQLite store and a free port, its artifacts proxied into tmp;
    stopped (its whole process group) when the module is done."""
    if not os.access(MLFLOW, os.X_OK):
        pytest.fail(f"no {MLFLOW}: the mlflow extra installs the full `mlflow` package "
                    "(mlflow-skinny has no server); pip install 'coalign[mlflow]'")
    root = tmp_path_factory.mktemp("mlflow-server")
    port = free_port()
    log = (root / "server.log").open("w")
    env = os.environ | {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # no fetch from the network
    proc = subprocess.Popen(
        [MLFLOW, "server", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
         "--artifacts-destination", str(root / "artifacts"), "--host", "127.0.0.1",
         "--port", str(port), "--workers", "1"],
        cwd=root, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"mlflow server exited ({proc.returncode}) before /health: "
                            + (root / "server.log").read_text()[-3000:])
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"mlflow server not up on {base} after {START_S} s: "
                            + (root / "server.log").read_text()[-3000:])
            time.sleep(1)
        yield base
    finally:
        with_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with_group(proc, signal.SIGKILL)
            proc.wait(timeout=30)
        log.close()
        shutil.rmtree(root / "artifacts", ignore_errors=True)


def with_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # the server's workers are in its session
    except ProcessLookupError:
        pass


def test_optimize_against_mlflow_server_reads_back_over_rest(tmp_path, server):
    prompt_project(tmp_path)
    optimize(tmp_path, "--run-dir", "run", "--mlflow", server)
    run_id = mlflow_run_id(tmp_path / "run")
    with RunStore(tmp_path / "run", readonly=True) as store:
        steps, result = store.steps(), store.get_meta("result")
        assert store.get_meta("tracking")["mlflow"]["target"] == server
    run = get(server, "runs/get", run_id=run_id)["run"]
    assert run["info"]["status"] == "FINISHED" and run["info"]["run_name"] == "run"
    params = {p["key"]: p["value"] for p in run["data"]["params"]}
    assert params["system"] == "my_pipeline:system" and params["budget.iterations"] == "2"
    assert "null" not in params.values() and "proposer" not in params
    metrics = {m["key"]: m["value"] for m in run["data"]["metrics"]}
    assert metrics["val_start"] == pytest.approx(steps[0][2]["val_before"])
    assert metrics["test.after"] == result["after"] == 1.0 > metrics["test.before"]
    assert metrics["cost.total.equivalent_runs"] > 0
    history = get(server, "metrics/get-history", run_id=run_id, metric_key="val_score")
    assert sorted(m["step"] for m in history["metrics"]) == [t for t, _, _ in steps]
    # the same run through runs/search, by experiment
    found = urllib.request.Request(
        f"{server}/api/2.0/mlflow/runs/search", method="POST",
        data=json.dumps({"experiment_ids": [run["info"]["experiment_id"]]}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(found, timeout=30) as resp:
        assert run_id in {r["info"]["run_id"] for r in json.load(resp)["runs"]}
    # the prompt: a registry version linked to the run, read back over REST
    tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
    (linked,) = json.loads(tags["mlflow.linkedPrompts"])
    assert linked == {"name": "my_pipeline_system.scaler.prompt", "version": "1"}
    version = get(server, "model-versions/get", name=linked["name"],
                  version=linked["version"])["model_version"]
    prompt_tags = {t["key"]: t["value"] for t in version.get("tags", [])}
    assert START_PROMPT in json.dumps(prompt_tags)  # MLflow keeps the template as a tag
    # artifacts, stored by the server (proxied: mlflow-artifacts:/)
    listed = get(server, "artifacts/list", run_id=run_id)
    assert {"report.html", "steps.json", "system.json", "prompts.json"} <= {
        f["path"] for f in listed["files"]}
    with urllib.request.urlopen(f"{server}/get-artifact?" + urllib.parse.urlencode(
            {"run_uuid": run_id, "path": "system.json"}), timeout=30) as resp:
        assert json.load(resp)["config"]["scaler"]["factor"] == 2
