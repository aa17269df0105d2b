"""Mirror a run store into trackers: params at the start, each ledger step, the outcome at the end.

Steps are read back from the store, not taken from the loop's ``StepRecord``: the store row
carries the cost ledger so far, and a step stored by a process killed before it reached the
tracker is logged by the next ``coalign resume`` (the tracker says which steps it holds).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coalign.errors import ConfigError, TrackingError
from coalign.store import RunStore
from coalign.tracking._base import BaseTracker, RunStatus

if TYPE_CHECKING:
    from coalign.optimize import Ledger, StepRecord

META = "tracking"  # run store meta: tracker name -> {"target", "run_id"}


def step_metrics(state: str, rec: Mapping[str, Any], step: int | None = None
                 ) -> dict[str, float]:
    """A ledger row as metrics: the current validation score (the candidate's if accepted),
    the candidate's own, the accepted flag, and equivalent runs and LLM calls so far; step 0
    also carries ``val_start``, the starting config's validation score."""
    accepted = state == "accepted"
    out = {"val_score": rec["val_after"] if accepted else rec["val_before"],
           "accepted": float(accepted), "step_seconds": rec["seconds"]}
    if step == 0 and rec.get("val_before") is not None:
        out["val_start"] = rec["val_before"]
    if rec.get("val_after") is not None:
        out["val_candidate"] = rec["val_after"]
    ledger = rec.get("ledger")
    if isinstance(ledger, Mapping):  # rows written before the ledger was stored lack it
        out["equivalent_runs"] = ledger["total_runs"]
        out["llm_calls"] = sum(ledger["llm_calls"].values())
    return {k: float(v) for k, v in out.items()}


def final_metrics(ledger: Ledger, alignment: Any, result: Any) -> dict[str, float]:
    """The cost ledger per phase, local-reward alignment per component and the test metric."""
    from coalign.report import alignment_rows  # the report's reading of stored alignment

    out: dict[str, float] = {}
    for phase, runs, calls, hits in ledger.rows():
        key = _key(phase)
        out |= {f"cost.{key}.equivalent_runs": runs, f"cost.{key}.llm_calls": calls,
                f"cost.{key}.cache_hits": hits}
    out["cost.total.equivalent_runs"] = ledger.total_runs
    out["cost.total.llm_calls"] = sum(ledger.llm_calls.values())
    for row in alignment_rows(alignment):
        for field in ("pairs", "accuracy", "inputs", "input_accuracy"):
            if (value := getattr(row, field)) is not None:
                out[f"alignment.{_key(row.component)}.{field}"] = value
    if isinstance(result, Mapping):
        out |= {f"test.{k}": result[k] for k in ("before", "after", "test_size") if k in result}
    return {k: float(v) for k, v in out.items()}


def run_prompts(store: RunStore) -> dict[str, dict[str, Any]]:
    """The run's prompts (its Text params) as ``component.param -> {"start", "final"}``, each
    value ``{"instruction", "demos"}``: the final from the last ledger step's config, the start
    from the config the unoptimized test score was measured on (the first test evaluation)."""
    space = store.get_meta("system_space") or {}
    texts = [(comp, name) for comp, params in space.items() if isinstance(params, Mapping)
             for name, spec in params.items()
             if isinstance(spec, Mapping) and spec.get("kind") == "text"]
    if not texts:
        return {}
    steps = store.steps()
    final = steps[-1][2].get("config") if steps else None
    start = None
    tested = store.trace_sample("test", 1)  # one trace per config, first stored first
    if tested:
        start = store.load_config(tested[0].config_digest)
    elif steps:  # not evaluated on test yet: the first step's config, as far as it goes
        start = steps[0][2].get("config")
    out: dict[str, dict[str, Any]] = {}
    for comp, name in texts:
        stages = {stage: _text(config, comp, name)
                  for stage, config in (("start", start), ("final", final or start))}
        if any(v is not None for v in stages.values()):
            out[f"{comp}.{name}"] = {k: v for k, v in stages.items() if v is not None}
    return out


def _text(config: Any, comp: str, name: str) -> dict[str, Any] | None:
    value = config.get(comp, {}).get(name) if isinstance(config, Mapping) else None
    if isinstance(value, str):
        return {"instruction": value, "demos": []}
    if isinstance(value, Mapping) and isinstance(value.get("instruction"), str):
        return {"instruction": value["instruction"], "demos": list(value.get("demos") or [])}
    return None


def _key(name: str) -> str:
    # tracker keys allow letters, digits and _ - . / and space
    return re.sub(r"[^\w\-./ ]", "_", str(name))


class RunTracking:
    """The trackers of one optimization, opened as a context manager around the run: the
    tracked run ends FINISHED, KILLED (interrupted) or FAILED with it. No trackers: no-op."""

    def __init__(self, trackers: Sequence[BaseTracker], store: RunStore, run_name: str,
                 params: Mapping[str, str], tags: Mapping[str, str]) -> None:
        self.trackers, self.store = list(trackers), store
        self._run = (run_name, dict(params), dict(tags))
        self._logged: list[set[int]] = []

    def __enter__(self) -> RunTracking:
        known = self.store.get_meta(META) or {}
        ids = dict(known)
        for tracker in self.trackers:
            prev = known.get(tracker.name) or {}
            same = prev.get("target") == tracker.target
            run_id, logged = tracker.open(prev.get("run_id") if same else None, *self._run)
            ids[tracker.name] = {"target": tracker.target, "run_id": run_id}
            self._logged.append(logged)
        if self.trackers:
            self.store.set_meta(META, ids)
            self.sync()  # steps a killed process stored but did not log
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        status = (RunStatus.FINISHED if exc_type is None else RunStatus.KILLED
                  if issubclass(exc_type, KeyboardInterrupt) else RunStatus.FAILED)
        for tracker in self.trackers:
            try:
                tracker.close(status)
            except TrackingError:
                if exc_type is None:  # else the run's own error is the one to show
                    raise

    def on_step(self, record: StepRecord | None = None) -> None:
        """The loop's ``on_step`` callback: log what the ledger holds and the trackers lack."""
        self.sync()

    def sync(self) -> None:
        rows = self.store.steps() if self.trackers else []
        for tracker, logged in zip(self.trackers, self._logged, strict=True):
            for t, state, rec in rows:
                if t not in logged:
                    tracker.log(step_metrics(state, rec, t), step=t)
                    logged.add(t)

    def finish(self, ledger: Ledger) -> None:
        """Log the outcome: final metrics, the run's prompts (start and final), and the
        artifacts ``report.html``, ``steps.json`` (the step ledger), ``system.json`` (the
        exported final config) and ``prompts.json``."""
        if not self.trackers:
            return
        from coalign.export import export_run
        from coalign.report import write_report

        self.sync()
        store = self.store
        metrics = final_metrics(ledger, store.get_meta("lrf_alignment"), store.get_meta("result"))
        prompts = run_prompts(store)
        system = str(store.get_meta("system") or "system")  # prompt names: system.comp.param
        with tempfile.TemporaryDirectory(prefix="coalign-track-") as tmp:
            folder = Path(tmp)
            steps = [{"step": t, "state": state, **rec} for t, state, rec in store.steps()]
            (folder / "steps.json").write_text(json.dumps(steps, indent=1), encoding="utf-8")
            if prompts:
                (folder / "prompts.json").write_text(json.dumps(prompts, indent=1),
                                                     encoding="utf-8")
            write_report(store.run_dir, folder / "report.html")
            try:
                export_run(store.run_dir, folder / "system.json")
            except ConfigError:  # no step yet (iterations: 0): no final config to export
                pass
            for tracker in self.trackers:
                tracker.log(metrics)
                tracker.log_prompts({f"{system}.{k}": v for k, v in prompts.items()})
                tracker.log_artifacts(folder)
