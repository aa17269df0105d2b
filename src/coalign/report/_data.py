"""What a report shows, read from a run store into plain frozen records (no HTML here).

Everything is taken as stored and kept as plain strings and numbers; escaping is the renderer's
job. A run killed early lacks some parts: each absent part is listed in ``ReportData.missing``
with a one-line reason, and the rest is still built.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coalign.pairs import canonical_json
from coalign.report._costs import CostRow, ledger_costs, read_account
from coalign.report._format import reset_note, shorten, summarize_value
from coalign.report._routing import RouteRow, routing_rows
from coalign.report._scores import StepTest, StoredTests, step_tests, test_scores
from coalign.store import RunStore
from coalign.trace import Trace


@dataclass(frozen=True)
class StepRow:
    step: int
    accepted: bool
    component: str
    param: str
    value: str  # one-line summary of the proposed value
    reason: str
    val_before: float | None
    val_after: float | None
    seconds: float | None
    # what the local optimizer compared: (value summary, mean local reward), best first
    candidates: tuple[tuple[str, float], ...] = ()
    runs: float | None = None  # equivalent full-system runs spent so far (the step's ledger)


@dataclass(frozen=True)
class CurvePoint:
    """Validation score of the current system after ``step`` (-1: before the first step)."""

    step: int
    score: float
    candidate: float | None  # the proposal's validation score (None: nothing was validated)
    accepted: bool
    runs: float | None = None  # equivalent runs spent by then (None: not recorded)
    test: float | None = None  # the current system's test metric, where stored


@dataclass(frozen=True)
class AlignmentRow:
    component: str
    pairs: int | None
    accuracy: float | None
    inputs: int | None = None  # runs recorded before per-input figures have neither
    input_accuracy: float | None = None


@dataclass(frozen=True)
class ParamView:
    """One slot of the final configuration."""

    component: str
    param: str
    kind: str  # "text" | "policy" | "value"
    text: str  # instruction (text), the value as JSON (value), a note (policy)
    demos: tuple[str, ...]  # each demonstration as pretty JSON (text kind only)
    changed_at: tuple[int, ...]  # accepted steps that set this slot


@dataclass(frozen=True)
class ExampleAnswer:
    example_id: str
    inputs: str
    answer: str
    reward: float | None


@dataclass(frozen=True)
class ConfigExamples:
    label: str
    examples: tuple[ExampleAnswer, ...]


@dataclass(frozen=True)
class ReportData:
    run_dir: str
    system: str | None
    run_config: str | None  # pretty JSON of the user's run configuration
    result: Mapping[str, Any] | None
    steps: tuple[StepRow, ...]
    curve: tuple[CurvePoint, ...]
    costs: tuple[CostRow, ...]
    cost_source: str  # where the cost figures come from (last step / stage 1 only)
    alignment: tuple[AlignmentRow, ...]
    final: tuple[ParamView, ...]
    examples: tuple[ConfigExamples, ...]
    missing: tuple[str, ...]
    metric: str = "score"  # the global metric's name
    step_tests: tuple[StepTest, ...] = ()
    routing: tuple[RouteRow, ...] = ()
    routing_source: str = ""  # which traces the routing figures come from

    @property
    def accepted(self) -> int:
        return sum(s.accepted for s in self.steps)

    @property
    def total_runs(self) -> float:
        return sum(c.runs for c in self.costs)

    @property
    def total_calls(self) -> int:
        return sum(c.llm_calls for c in self.costs)

    @property
    def total_cache_hits(self) -> int | None:
        hits = [c.cache_hits for c in self.costs]
        return None if None in hits else sum(h for h in hits if h is not None)


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _config(raw: Any) -> dict[str, Mapping[str, Any]]:
    """A ledger row's config as far as it is one (component -> params mappings)."""
    items = raw.items() if isinstance(raw, Mapping) else ()
    return {str(c): params for c, params in items if isinstance(params, Mapping)}


def _policies(raw: Any) -> list[tuple[str, str]]:
    """A ledger row's (component, param) policies; malformed entries are skipped."""
    return [(str(p[0]), str(p[1])) for p in raw if isinstance(p, list | tuple) and len(p) == 2] \
        if isinstance(raw, list) else []


def step_rows(steps: Sequence[tuple[int, str, dict]]) -> tuple[StepRow, ...]:
    return tuple(StepRow(step, state == "accepted", str(rec.get("component", "?")),
                         str(rec.get("param", "?")),
                         summarize_value(rec.get("value")) + reset_note(rec.get("reset")),
                         _reason(rec), _float(rec.get("val_before")),
                         _float(rec.get("val_after")), _float(rec.get("seconds")),
                         _candidates(rec.get("candidates")) + _variants(rec),
                         _spent(rec.get("ledger")))
                 for step, state, rec in steps)


def _spent(ledger: Any) -> float | None:
    """A ledger's total equivalent runs."""
    runs = ledger.get("runs") if isinstance(ledger, Mapping) else None
    values = [_float(v) for v in runs.values()] if isinstance(runs, Mapping) else [None]
    return None if None in values else sum(v for v in values if v is not None)


def _reason(rec: dict) -> str:
    reason = str(rec.get("reason", ""))
    if reason.startswith("validation stopped early") and isinstance(rec.get("val_checked"), int):
        # its val after is the current score plus the paired difference on those inputs
        reason += f" (on the first {rec['val_checked']} validation inputs; val after estimated)"
    return reason


def _candidates(raw: Any) -> tuple[tuple[str, float], ...]:
    """Ledger candidates (runs before they were recorded have none); malformed ones skipped."""
    out = []
    for c in raw if isinstance(raw, list) else []:
        score = _float(c.get("local_reward")) if isinstance(c, Mapping) else None
        if score is not None:
            out.append((summarize_value(c.get("value")), score))
    return tuple(out)


def _variants(rec: dict) -> tuple[tuple[str, float], ...]:
    """A switched choice's variants (as proposed / siblings reset), scored on the component's
    outputs: listed after the options' own scores."""
    out = []
    for v in rec.get("variants") or []:
        score = _float(v.get("local_reward")) if isinstance(v, Mapping) else None
        if score is not None:
            note = reset_note(v.get("reset")) or " (as proposed)"
            out.append((summarize_value(rec.get("value")) + note, score))
    return tuple(out)


def curve(rows: Sequence[StepRow], tests: Mapping[int, float] | None = None,
          start_runs: float | None = None) -> tuple[CurvePoint, ...]:
    """The current system's validation score over iterations, starting before step 0, with
    the runs spent by then and the current system's test metric where ``tests`` (step -> test
    metric after that step; -1: before any) has it."""
    tests = tests or {}
    points: list[CurvePoint] = []
    test = tests.get(-1)
    for row in rows:
        if row.val_before is None:
            continue
        if not points:
            points.append(CurvePoint(-1, row.val_before, None, False, start_runs, test))
        now = row.val_before
        if row.accepted and row.val_after is not None:
            now, test = row.val_after, tests.get(row.step)
        points.append(CurvePoint(row.step, now, row.val_after, row.accepted, row.runs, test))
    return tuple(points)


def alignment_rows(raw: Any) -> tuple[AlignmentRow, ...]:
    if not isinstance(raw, Mapping):
        return ()
    out = []
    for comp, entry in raw.items():
        entry = entry if isinstance(entry, Mapping) else {}
        pairs, inputs = entry.get("pairs"), entry.get("inputs")
        out.append(AlignmentRow(str(comp), pairs if isinstance(pairs, int) else None,
                                _float(entry.get("accuracy")),
                                inputs if isinstance(inputs, int) else None,
                                _float(entry.get("input_accuracy"))))
    return tuple(out)


def final_params(config: Mapping[str, Mapping[str, Any]], policies: Sequence[Sequence[str]],
                 rows: Sequence[StepRow]) -> tuple[ParamView, ...]:
    chosen = {(str(c), str(p)) for c, p in policies}
    out = []
    for comp, params in config.items():
        for name, value in params.items():
            changed = tuple(r.step for r in rows
                            if r.accepted and (r.component, r.param) == (comp, name))
            if (comp, name) in chosen:
                view = ParamView(comp, name, "policy", "chosen per input by the local reward "
                                 f"(default {summarize_value(value)})", (), changed)
            elif isinstance(value, Mapping) and isinstance(value.get("instruction"), str):
                demos = tuple(json.dumps(d, indent=2, ensure_ascii=False)
                              for d in value.get("demos") or [])
                view = ParamView(comp, name, "text", value["instruction"], demos, changed)
            else:
                view = ParamView(comp, name, "value", summarize_value(value), (), changed)
            out.append(view)
    return tuple(out)


def selectors_suffix(policies: Sequence[Sequence[str]], selectors: Any = None) -> str:
    """Each policy with the digest of its frozen reward (``optimize._selectors.policy_suffix``):
    what follows the config digest in a trace key, and ``test`` in a test trace's tag."""
    frozen = selectors if isinstance(selectors, Mapping) else {}
    return "".join(sorted(f"|{c}.{p}@{str(frozen.get(f'{c}.{p}', ''))[:12]}"
                          for c, p in policies))


def config_key(system: str, config: Mapping, policies: Sequence[Sequence[str]],
               selectors: Any = None) -> str:
    """The trace key the loop stores validation traces under: config digest + selectors."""
    digest = hashlib.sha256(canonical_json([system, config]).encode("utf-8")).hexdigest()
    return digest + selectors_suffix(policies, selectors)


def _answer(trace: Trace) -> str:
    ran = [s for s in trace.steps if not s.skipped]
    outputs = ran[-1].outputs if ran else trace.state
    if len(outputs) == 1:
        (only,) = outputs.values()
        return shorten(only if isinstance(only, str) else json.dumps(only, ensure_ascii=False),
                       300)
    return shorten(json.dumps(outputs, ensure_ascii=False), 300)


def example_groups(traces: Sequence[Trace], labels: Mapping[str, str],
                   per_config: int) -> tuple[ConfigExamples, ...]:
    """A few final answers per validated configuration, the same examples across configs."""
    groups: dict[str, list[Trace]] = {}
    for t in traces:
        groups.setdefault(t.config_digest, []).append(t)
    if not groups:
        return ()
    shown = [t.example_id for t in next(iter(groups.values()))][:per_config]
    out = []
    for i, (key, group) in enumerate(groups.items()):
        by_id = {t.example_id: t for t in group}
        picked = [by_id[e] for e in shown if e in by_id] or group[:per_config]
        label = labels.get(key) or ("initial configuration" if i == 0
                                    else f"configuration {key[:12]}")
        out.append(ConfigExamples(label, tuple(
            ExampleAnswer(t.example_id, shorten(json.dumps(t.inputs, ensure_ascii=False), 300),
                          _answer(t), t.reward) for t in picked)))
    return tuple(out)


def build_report_data(store: RunStore, *, examples_per_config: int = 3) -> ReportData:
    """Read everything the report shows from ``store``; nothing is written."""
    missing = []
    system = store.get_meta("system")
    if system is None:
        missing.append("system name: not recorded in the run store")
    run_config = store.get_meta("run_config")
    if run_config is None:
        missing.append("run configuration: not recorded (run not started by coalign optimize?)")
    steps = store.steps()
    rows = step_rows(steps)
    if not steps:
        missing.append("optimizer steps: none recorded (the run stopped before its first step)")
    costs, cost_source = ledger_costs(steps, store)
    if not costs:
        missing.append("cost ledger: no ledger or stage-1 account recorded")
    alignment = alignment_rows(store.get_meta("lrf_alignment"))
    if not alignment:
        missing.append("local reward alignment: not measured or not recorded")
    result = store.get_meta("result")
    if not isinstance(result, Mapping):
        result = None
        missing.append("test result: not recorded (the run did not reach its test evaluation)")
    final: tuple[ParamView, ...] = ()
    labels: dict[str, str] = {}
    tested = StoredTests.read(store, {"", *(selectors_suffix(_policies(r.get("policies")),
                                                             r.get("selectors"))
                                           for _, _, r in steps)})
    keys = _keys(None if system is None else str(system), steps, tested.digests)
    if steps:
        last = steps[-1][2]
        final = final_params(_config(last.get("config")), _policies(last.get("policies")), rows)
        for step, key in keys.items():
            if step != _LAST:
                labels.setdefault(key, f"after step {step} (accepted)")
    if steps and not final:
        missing.append("final configuration: the last step recorded no config")
    val_traces = store.trace_sample("val", examples_per_config)
    if not val_traces:
        missing.append("example answers: no validation traces recorded")
    tests = test_scores(tested, {t: k for t, k in keys.items() if t != _LAST}, result)
    routing, routing_source = _routing(store, tested, keys.get(_LAST))
    stage1 = read_account(store.get_meta("stage1_account"))
    metric = (result or {}).get("metric") or (
        run_config.get("metric") if isinstance(run_config, Mapping) else None) or "score"
    return ReportData(
        run_dir=str(store.run_dir), system=None if system is None else str(system),
        run_config=None if run_config is None else json.dumps(run_config, indent=2,
                                                              ensure_ascii=False),
        result=result, steps=rows,
        curve=curve(rows, tests, None if stage1 is None else stage1.equivalent_runs()),
        costs=costs, cost_source=cost_source, alignment=alignment, final=final,
        examples=example_groups(val_traces, labels, examples_per_config),
        missing=tuple(missing), metric=str(metric), step_tests=step_tests(rows, tests),
        routing=routing, routing_source=routing_source)


_LAST = "last"  # in ``_keys``: the config after the last step, accepted or not


def _keys(system: str | None, steps: Sequence[tuple[int, str, dict]],
          digests: Mapping[str, str]) -> dict[int | str, str]:
    """The trace key of the config after each accepted step, and after the last step. A
    config evaluated on test has its digest stored (``digests``: by canonical JSON); another is
    hashed under the run's system name (right when it is the ``System``'s own name)."""
    out: dict[int | str, str] = {}
    for step, state, rec in steps:
        digest = digests.get(canonical_json(rec.get("config")))
        if not isinstance(rec.get("config"), Mapping) or (digest is None and system is None):
            continue
        policies, selectors = _policies(rec.get("policies")), rec.get("selectors")
        key = (config_key(str(system), rec["config"], policies, selectors) if digest is None
               else digest + selectors_suffix(policies, selectors))
        if state == "accepted":
            out[step] = key
        if step == steps[-1][0]:
            out[_LAST] = key
    return out


def _routing(store: RunStore, tested: StoredTests,
             key: str | None) -> tuple[tuple[RouteRow, ...], str]:
    """Per-instance choices of the final config: on its test traces, else on validation."""
    if key is None:
        return (), ""
    for split, traces in (("test", lambda: tested.traces.get(key, [])),
                          ("validation", lambda: store.traces("val", key))):
        rows = routing_rows(traces(), summarize_value)
        if rows:
            return rows, f"the final system on the {split} split"
    return (), ""
