"""The tracker strategy: where a run's params, per-step metrics and artifacts are mirrored.

A tracker only receives values (flat params, a step's metrics, a folder of artifacts); what to
send, and which steps are still missing, is decided once in ``_run`` from the run store, which
stays the single source of truth.
"""

from __future__ import annotations

import abc
import enum
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field


class TrackingSpec(BaseModel):
    """The ``tracking`` block of a run config: one field per tracker in ``TRACKERS``."""

    model_config = ConfigDict(extra="forbid")

    mlflow: str | None = Field(None, min_length=1)  # tracking URI: sqlite:///mlflow.db, http://…
    experiment: str = Field("coalign", min_length=1)  # experiment (MLflow) the run is filed under


class RunStatus(enum.Enum):
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    KILLED = "KILLED"  # interrupted (Ctrl-C): `coalign resume` continues the same tracked run


class BaseTracker(abc.ABC):
    """One tracked run in an external experiment tracker.

    ``target`` says where the runs go (credentials removed): a stored run id is reused only
    for the same target.
    """

    name: ClassVar[str]
    target: str

    @abc.abstractmethod
    def open(self, run_id: str | None, run_name: str, params: Mapping[str, str],
             tags: Mapping[str, str]) -> tuple[str, set[int]]:
        """Continue ``run_id`` if the tracker still holds it, else start a run and log
        ``params`` (params are never rewritten: trackers refuse changed values).

        Returns:
            The run's id and the steps it already holds.
        """

    @abc.abstractmethod
    def log(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        """Log ``metrics`` as one batch: a step is in the tracker whole or not at all."""

    @abc.abstractmethod
    def log_artifacts(self, folder: Path) -> None:
        """Upload every file under ``folder`` (replacing files of the same path)."""

    def log_prompts(self, prompts: Mapping[str, Mapping[str, Any]]) -> None:  # optional hook
        """Record the run's prompts: ``name -> {"start": value, "final": value}``, each value
        a Text param's JSON form (``{"instruction": str, "demos": [...]}``)."""
        return None

    def close(self, status: RunStatus) -> None:  # optional hook
        return None


def flat_params(tree: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested settings as ``a.b -> text``: strings as they are, everything else as JSON (so
    ``true`` and lists read unambiguously). Unset settings (None) are left out: a tracker
    would show them as the string ``null``, and absent reads as unset anyway."""
    out: dict[str, str] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if value is None:
            continue
        if isinstance(value, Mapping) and value:
            out.update(flat_params(value, name + "."))
        else:
            out[name] = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return out
