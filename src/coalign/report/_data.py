"""What a report shows, read from a run store into plain frozen records (no HTML here).

Everything is taken as stored and kept as plain strings and numbers; escaping is the renderer's
job. A run killed early lacks some parts: each absent part is listed in ``ReportData.missing``
with a one-line reason, and the rest is still built.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coalign.pairs import canonical_json
from coalign.report._alignment import AlignmentRow, alignment_rows, min_pairs
from coalign.report._costs import CostRow, ledger_costs, read_account
from coalign.report._format import shorten, summarize_value
from coalign.report._front import FrontPoint, front_points
from coalign.report._intervals import Interval, paired
from coalign.report._routing import RouteRow, routing_rows
from coalign.report._scores import StepTest, StoredTests, step_tests, test_scores, val_groups
from coalign.report._steps import CurvePoint, StepRow, curve, step_rows
from coalign.store import RunStore
from coalign.trace import Trace


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
    # the final system's test metric minus the unoptimized one's, paired over the test inputs
    test_interval: Interval | None = None
    front: tuple[FrontPoint, ...] = ()  # quality against cost of each validated config
    min_pairs: int = 0  # alignment figures on fewer held-out pairs are not meaningful

    @property
    def accepted(self) -> int:
        return sum(s.accepted for s in self.steps)

    @property
    def rejected(self) -> int:
        return sum(s.decision == "rejected" for s in self.steps)

    @property
    def skipped(self) -> int:
        return sum(s.decision == "skipped" for s in self.steps)

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


def _config(raw: Any) -> dict[str, Mapping[str, Any]]:
    """A ledger row's config as far as it is one (component -> params mappings)."""
    items = raw.items() if isinstance(raw, Mapping) else ()
    return {str(c): params for c, params in items if isinstance(params, Mapping)}


def _policies(raw: Any) -> list[tuple[str, str]]:
    """A ledger row's (component, param) policies; malformed entries are skipped."""
    return [(str(p[0]), str(p[1])) for p in raw if isinstance(p, list | tuple) and len(p) == 2] \
        if isinstance(raw, list) else []


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
    fewest = min_pairs(run_config)
    alignment = alignment_rows(store.get_meta("lrf_alignment"), fewest)
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
    validated = val_groups(store)
    # the run's seed: the gate's and the CLI's bootstrap seed (``RunConfig.seed``)
    seed = run_config.get("seed") if isinstance(run_config, Mapping) else None
    seed = seed if isinstance(seed, int) else 0
    rows = _with_intervals(rows, keys, validated, seed)
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
        routing=routing, routing_source=routing_source,
        test_interval=_test_interval(tested, validated, keys.get(_LAST), seed),
        front=front_points(validated, labels), min_pairs=fewest)


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


def _with_intervals(rows: Sequence[StepRow], keys: Mapping[int | str, str],
                    validated: Mapping[str, Sequence[Trace]], seed: int) -> tuple[StepRow, ...]:
    """Each accepted step with the paired interval of its validation gain over the config
    before it (the previous accepted one, first the unoptimized system's): the figures the
    gate decided on, with its seed."""
    prev = next(iter(validated), None)
    out = []
    for r in rows:
        key = keys.get(r.step) if r.accepted else None
        if key is not None:
            new, old = validated.get(key), validated.get(prev) if prev is not None else None
            if new and old:
                r = dataclasses.replace(r, interval=paired(new, old, seed))
            prev = key
        out.append(r)
    return tuple(out)


def _test_interval(tested: StoredTests, validated: Mapping[str, Sequence[Trace]],
                   final: str | None, seed: int) -> Interval | None:
    """Final against unoptimized system on test, as ``coalign optimize`` prints it: the
    unoptimized system's trace key is the first validated one."""
    start = next(iter(validated), None)
    new, old = tested.traces.get(final or ""), tested.traces.get(start or "")
    if not new or not old:
        return None
    return paired(new, old, seed)


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
