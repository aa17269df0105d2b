"""MLflow tracker (extra ``coalign[mlflow]``): one MLflow run per optimization, via
``MlflowClient`` (no fluent API: its active run is process-global state)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from coalign.errors import ConfigError, TrackingError
from coalign.lm import redact_url
from coalign.tracking._base import BaseTracker, RunStatus

# The metric whose history tells which steps a run holds: every step's batch includes it.
STEP_KEY = "val_score"


def _one_line(text: str, limit: int = 300) -> str:
    """MLflow's first line, cut after a whole sentence: its messages run long, with the fix
    often in the second sentence."""
    first = (text.strip().splitlines() or ["(no message)"])[0]
    if len(first) <= limit:
        return first
    cut = first.rfind(". ", 0, limit)
    return first[:cut + 1] if cut > 0 else first[:limit - 3] + "..."


def _password(uri: str) -> str | None:
    """The key in ``uri``'s userinfo, also masked wherever a message quotes it without the
    ``scheme://`` that ``redact_url`` keys on."""
    try:
        password = urlsplit(uri).password
    except ValueError:
        return None
    return password if password and len(password) >= 4 else None  # "a" would mask every a


class MLflowTracker(BaseTracker):
    """Params: the run config flattened; a metric per ledger step (MLflow step = ledger step);
    the cost ledger, alignment and test metric at the end; artifacts as given."""

    name = "mlflow"

    def __init__(self, uri: str, experiment: str = "coalign") -> None:
        try:
            from mlflow.tracking import MlflowClient
        except ImportError:
            raise ConfigError("run config field 'tracking.mlflow': MLflow is not installed; "
                              "pip install 'coalign[mlflow]'") from None
        self.target, self._experiment = redact_url(uri), experiment
        self._secret = _password(uri)
        with self._mapped():
            self._client = MlflowClient(uri)
        self._run_id: str | None = None

    @contextlib.contextmanager
    def _mapped(self) -> Iterator[None]:
        """MLflow's errors (a bad URI, a server that is down) as one-line ``TrackingError``."""
        from mlflow.exceptions import MlflowException

        try:
            yield
        except MlflowException as exc:
            # MLflow's messages quote the URI it was given, credentials and all: redacted
            # before the cut, which could split a URL's userinfo from its "@"
            text = redact_url(str(exc.message))
            if self._secret:
                text = text.replace(self._secret, "***")
            raise TrackingError(f"MLflow at {self.target}: {_one_line(text)}") from None

    def open(self, run_id: str | None, run_name: str, params: Mapping[str, str],
             tags: Mapping[str, str]) -> tuple[str, set[int]]:
        with self._mapped():
            if run_id is not None and self._holds(run_id):
                self._run_id = run_id
                self._client.update_run(run_id, status="RUNNING")
                history = self._client.get_metric_history(run_id, STEP_KEY)
                return run_id, {m.step for m in history}
            experiment = self._client.get_experiment_by_name(self._experiment)
            exp_id = (experiment.experiment_id if experiment is not None
                      else self._client.create_experiment(self._experiment))
            run = self._client.create_run(exp_id, run_name=run_name, tags=dict(tags))
            self._run_id = run.info.run_id
            self._log_params(params)
        return self._run_id, set()

    def _holds(self, run_id: str) -> bool:
        from mlflow.exceptions import MlflowException

        try:
            return self._client.get_run(run_id).info.lifecycle_stage == "active"
        except MlflowException:  # deleted for good, or another store under the same URI
            return False

    def _log_params(self, params: Mapping[str, str]) -> None:
        from mlflow.entities import Param
        from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH, MAX_PARAMS_TAGS_PER_BATCH

        # a long start prompt is cut, not refused: the full config is in the run dir
        items = [Param(k, v if len(v) <= MAX_PARAM_VAL_LENGTH
                       else v[:MAX_PARAM_VAL_LENGTH - 3] + "...") for k, v in params.items()]
        for i in range(0, len(items), MAX_PARAMS_TAGS_PER_BATCH):
            self._client.log_batch(self._live(), params=items[i:i + MAX_PARAMS_TAGS_PER_BATCH])

    def _live(self) -> str:
        if self._run_id is None:
            raise RuntimeError("MLflowTracker: open() a run first")
        return self._run_id

    def log(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        with self._mapped():
            self._client.log_batch(self._live(), metrics=[
                Metric(k, float(v), now, step or 0) for k, v in metrics.items()])

    def log_artifacts(self, folder: Path) -> None:
        with self._mapped():
            self._client.log_artifacts(self._live(), str(folder))

    def close(self, status: RunStatus) -> None:
        if self._run_id is not None:
            with self._mapped():
                self._client.set_terminated(self._run_id, status=status.value)
