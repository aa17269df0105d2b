"""MLflow tracker (extra ``coalign[mlflow]``): one MLflow run per optimization, via
``MlflowClient`` (no fluent API: its active run is process-global state)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from coalign.errors import ConfigError, TrackingError
from coalign.lm import redact_url
from coalign.tracking._base import BaseTracker, RunStatus

# The metric whose history tells which steps a run holds: every step's batch includes it.
STEP_KEY = "val_score"
# `--mlflow` alone, or `tracking: {mlflow: default}`: where MLflow itself would track
DEFAULT_URI = "default"
# MLflow 3 refuses its file store (`file:DIR`, a plain path) unless this is true; a file: URI
# given to coalign is the user's opt-in, so it is set while the tracker talks to that store
# (unless the environment says otherwise: then MLflow's own refusal is shown)
ALLOW_FILE_STORE = "MLFLOW_ALLOW_FILE_STORE"
# the run tag MLflow's UI reads a run's prompts from (as mlflow.genai.load_prompt links them)
LINKED_PROMPTS = "mlflow.linkedPrompts"


def default_tracking_uri(cwd: Path | None = None) -> str:
    """What ``--mlflow`` alone tracks to: ``$MLFLOW_TRACKING_URI`` if set, else MLflow's own
    default store ``mlflow.db`` in the current folder, as an absolute ``sqlite:///`` URI (so
    ``coalign resume`` from elsewhere finds it, and ``mlflow ui`` run in that folder shows it).
    """
    if uri := os.environ.get("MLFLOW_TRACKING_URI", "").strip():
        return uri
    return f"sqlite:///{(cwd or Path.cwd()).resolve() / 'mlflow.db'}"


def is_file_store(uri: str) -> bool:
    """``file:DIR``, ``file:///DIR`` or a plain path: MLflow's (maintenance-mode) file store."""
    if uri in ("databricks", "databricks-uc", "uc"):
        return False
    scheme = urlsplit(uri).scheme
    return scheme == "file" or scheme == "" or (len(scheme) == 1 and uri[1:3] in (":\\", ":/"))


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`'\"(])")
_FIX = re.compile(r"\b(set|install|use|run|pass|upgrade|specify|migrate|try)\b", re.I)


def _one_line(text: str, limit: int = 400) -> str:
    """MLflow's message on one line, whole when short. A long one keeps its first sentences
    up to ``limit`` and the last sentence that says what to do (MLflow puts the fix last:
    "… set `MLFLOW_ALLOW_FILE_STORE=true` to opt out"), joined by " … "."""
    flat = " ".join(text.split()) or "(no message)"
    if len(flat) <= limit:
        return flat
    # a line ends a sentence too (a traceback's lines, a server's response body)
    sentences = [part for line in text.splitlines()
                 for part in _SENTENCE.split(" ".join(line.split())) if part]
    fix = next((s for s in reversed(sentences[1:]) if _FIX.search(s)), "")
    head, room = "", limit - len(fix) - 3
    for sentence in sentences:
        if sentence == fix or len(head) + len(sentence) + 1 > max(room, limit // 2):
            break
        head = f"{head} {sentence}".strip()
    if not head:  # one endless sentence
        head = flat[:max(room, limit // 2) - 3] + "..."
    return f"{head} … {fix}" if fix and fix not in head else head


def _password(uri: str) -> str | None:
    """The key in ``uri``'s userinfo, also masked wherever a message quotes it without the
    ``scheme://`` that ``redact_url`` keys on."""
    try:
        password = urlsplit(uri).password
    except ValueError:
        return None
    return password if password and len(password) >= 4 else None  # "a" would mask every a


def _holds(version: Any, held: tuple[str, str]) -> bool:
    """Whether a prompt version holds (template, demos JSON)."""
    return (version.template, (version.tags or {}).get("coalign.demos", "[]")) == held


def _prompt_name(name: str) -> str:
    # registry names allow letters, digits, _ - and .
    return re.sub(r"[^\w\-.]", "_", name)


class MLflowTracker(BaseTracker):
    """Params: the run config flattened; a metric per ledger step (MLflow step = ledger step);
    the cost ledger, alignment and test metric at the end; the prompts in MLflow's prompt
    registry; artifacts as given. ``uri`` may be ``default`` (``default_tracking_uri``) or a
    ``file:`` store, which MLflow 3 only opens when opted in."""

    name = "mlflow"

    def __init__(self, uri: str, experiment: str = "coalign") -> None:
        try:
            from mlflow.tracking import MlflowClient
        except ImportError:
            raise ConfigError("run config field 'tracking.mlflow': MLflow is not installed; "
                              "pip install 'coalign[mlflow]'") from None
        if uri == DEFAULT_URI:
            uri = default_tracking_uri()
        self.target, self._experiment = redact_url(uri), experiment
        self._secret = _password(uri)
        self._file_store = is_file_store(uri)
        with self._mapped():
            self._client = MlflowClient(uri)
        self._run_id: str | None = None

    @contextlib.contextmanager
    def _mapped(self) -> Iterator[None]:
        """MLflow's errors (a bad URI, a server that is down) as one-line ``TrackingError``;
        a file store allowed while MLflow is called (it builds its store on first use)."""
        from mlflow.exceptions import MlflowException

        opt_in = self._file_store and ALLOW_FILE_STORE not in os.environ
        if opt_in:
            os.environ[ALLOW_FILE_STORE] = "true"
        try:
            yield
        except MlflowException as exc:
            raise TrackingError(f"MLflow at {self.target}: {self._message(exc)}") from None
        finally:
            if opt_in:
                os.environ.pop(ALLOW_FILE_STORE, None)

    def _message(self, exc: Exception) -> str:
        # MLflow's messages quote the URI it was given, credentials and all: redacted before
        # the cut, which could split a URL's userinfo from its "@"
        text = redact_url(str(getattr(exc, "message", exc)))
        if self._secret:
            text = text.replace(self._secret, "***")
        return _one_line(text)

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

    def log_prompts(self, prompts: Mapping[str, Mapping[str, Any]]) -> None:
        """Each prompt's start and final value as versions in MLflow's prompt registry (a
        value the prompt's latest version, or a version this run links, already holds is
        reused), linked to the run as MLflow links a loaded prompt. A store without a prompt
        registry gets run tags ``coalign.prompt.<name>.<start|final>`` instead."""
        from mlflow.exceptions import MlflowException

        if not prompts:
            return
        with self._mapped():
            try:
                current = json.loads(self._client.get_run(self._live()).data.tags.get(
                    LINKED_PROMPTS) or "[]")
            except json.JSONDecodeError:  # not written by MLflow or coalign: rewritten
                current = []
            if not isinstance(current, list):
                current = []
            try:
                linked = self._register(prompts, current)
            except MlflowException as exc:  # a file store, an old server: no registry
                self._prompt_tags(prompts, self._message(exc))
                return
            new = [entry for entry in linked if entry not in current]
            if new:
                self._client.set_tag(self._live(), LINKED_PROMPTS, json.dumps(current + new))

    def _register(self, prompts: Mapping[str, Mapping[str, Any]],
                  current: list[dict[str, str]]) -> list[dict[str, str]]:
        """The versions holding each prompt's start and final value (``current``: those the
        run links already, reused first)."""
        linked: list[dict[str, str]] = []
        for name, stages in prompts.items():
            registry_name = _prompt_name(name)
            known = [self._linked_version(e) for e in current
                     if isinstance(e, dict) and e.get("name") == registry_name]
            for stage in ("start", "final"):
                if (value := stages.get(stage)) is None:
                    continue
                held = (value["instruction"],
                        json.dumps(value.get("demos") or [], sort_keys=True))
                version = next((v for v in known if v is not None and _holds(v, held)), None)
                if version is None:
                    version = self._prompt_version(registry_name, held, stage)
                    known.append(version)
                entry = {"name": version.name, "version": str(version.version)}
                if entry not in linked:
                    linked.append(entry)
        return linked

    def _linked_version(self, entry: Mapping[str, str]) -> Any:
        from mlflow.exceptions import MlflowException

        try:
            return self._client.get_prompt_version(entry["name"], entry["version"])
        except (MlflowException, KeyError):  # deleted since, or a malformed entry
            return None

    def _prompt_version(self, name: str, held: tuple[str, str], stage: str) -> Any:
        """The latest version of ``name`` if it holds ``held`` (template, demos JSON), else a
        new one tagged with this run."""
        if self._client.get_prompt(name) is not None:
            versions = list(self._client.search_prompt_versions(name))
            latest = max(versions, key=lambda v: int(v.version), default=None)
            if latest is not None and _holds(latest, held):
                return latest
        tags = {"coalign.run_id": self._live(), "coalign.stage": stage, "coalign.demos": held[1]}
        return self._client.register_prompt(
            name, held[0], commit_message=f"coalign: {stage} prompt of run {self._live()}",
            tags=tags)

    def _prompt_tags(self, prompts: Mapping[str, Mapping[str, Any]], why: str) -> None:
        from mlflow.entities import RunTag
        from mlflow.utils.validation import MAX_TAG_VAL_LENGTH

        tags = [RunTag("coalign.prompts", f"not in a prompt registry: {why}"[:MAX_TAG_VAL_LENGTH])]
        for name, stages in prompts.items():
            for stage, value in stages.items():
                text = value["instruction"]
                if len(text) > MAX_TAG_VAL_LENGTH:
                    text = text[:MAX_TAG_VAL_LENGTH - 3] + "..."
                tags.append(RunTag(f"coalign.prompt.{_prompt_name(name)}.{stage}", text))
        self._client.log_batch(self._live(), tags=tags)

    def close(self, status: RunStatus) -> None:
        if self._run_id is not None:
            with self._mapped():
                self._client.set_terminated(self._run_id, status=status.value)
