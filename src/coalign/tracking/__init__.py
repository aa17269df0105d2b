"""Experiment tracking: mirror an optimization into MLflow (or another tracker) as it runs."""

from __future__ import annotations

from collections.abc import Callable

from coalign.tracking._base import BaseTracker, RunStatus, TrackingSpec, flat_params
from coalign.tracking._mlflow import DEFAULT_URI, MLflowTracker, default_tracking_uri
from coalign.tracking._run import RunTracking, final_metrics, run_prompts, step_metrics

# tracker name (a field of TrackingSpec) -> its class, called with (target, experiment)
TRACKERS: dict[str, Callable[[str, str], BaseTracker]] = {"mlflow": MLflowTracker}


def make_trackers(spec: TrackingSpec) -> list[BaseTracker]:
    """The trackers ``spec`` names (none when its tracker fields are all unset)."""
    return [cls(target, spec.experiment) for name, cls in TRACKERS.items()
            if (target := getattr(spec, name)) is not None]


__all__ = ["DEFAULT_URI", "TRACKERS", "BaseTracker", "MLflowTracker", "RunStatus",
           "RunTracking", "TrackingSpec", "default_tracking_uri", "final_metrics", "flat_params",
           "make_trackers", "run_prompts", "step_metrics"]
