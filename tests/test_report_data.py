"""The report's data layer: what is read from a run store, without rendering."""

from __future__ import annotations

import json

import pytest

import coalign.report as report
from coalign.costs import CostAccount
from coalign.report._data import config_key, curve, step_rows, summarize_value
from coalign.store import RunStore
from coalign.trace import Step, Trace
from tests.test_report_support import (
    CANDIDATE_INJECT,
    DEMO,
    INJECT,
    METRIC_INJECT,
    OPTION_INJECT,
    TEST_SIZE,
    make_system,
    populate,
    populate_charts,
)


@pytest.fixture
def data(tmp_path):
    populate(tmp_path)
    with RunStore(tmp_path, create=False) as store:
        return report.build_report_data(store)


def test_all_is_exported() -> None:
    public = {n for n in dir(report) if not n.startswith("_")}
    assert set(report.__all__) == public


def test_steps_keep_order_states_and_scores(data) -> None:
    assert [(s.step, s.accepted) for s in data.steps] == [(0, True), (1, False), (2, True),
                                                          (3, False)]
    assert data.accepted == 2
    first = data.steps[0]
    assert (first.component, first.param, first.val_before, first.val_after) == (
        "answer", "prompt", 0.40, 0.50)
    assert first.value.endswith("(+1 demos)") and first.value.startswith("<script>")
    assert data.steps[2].value == "per-instance choice by the local reward"
    assert data.steps[3].val_after is None and data.steps[3].reason == "no change proposed"
    # the candidates compared, as recorded (malformed entries skipped); older steps have none
    cands = data.steps[3].candidates
    assert [score for _, score in cands] == [0.71, 0.42] and cands[0][1] > cands[1][1]
    assert cands[1][0] == CANDIDATE_INJECT and data.steps[0].candidates == ()


def test_curve_tracks_the_current_system(data) -> None:
    # start 0.40; step 0 accepted -> 0.50; step 1 rejected (candidate 0.45) stays 0.50;
    # step 2 accepted -> 0.55; step 3 proposed nothing, so no candidate.
    got = [(p.step, p.score, p.candidate, p.accepted) for p in data.curve]
    assert got == [(-1, 0.40, None, False), (0, 0.50, 0.50, True), (1, 0.50, 0.45, False),
                   (2, 0.55, 0.55, True), (3, 0.55, None, False)]


def test_cost_rows_in_table_11_order_with_totals(data) -> None:
    assert [c.phase for c in data.costs] == ["lrf_train", "adapt", "validation", "local_search"]
    assert [c.llm_calls for c in data.costs] == [360, 300, 140, 30]
    assert data.total_runs == pytest.approx(323.33)
    assert data.total_calls == 830
    assert [c.cache_hits for c in data.costs] == [40, 0, 12, 0] and data.total_cache_hits == 52
    assert data.cost_source == "ledger after step 3"


def test_alignment_and_result(data) -> None:
    assert [(a.component, a.pairs, a.accuracy, a.inputs, a.input_accuracy)
            for a in data.alignment] == [("answer", 40, 0.725, 9, 0.61),
                                         ("route", 12, None, None, None)]  # an older run's
    assert data.result["after"] == 0.47 and data.missing == ()
    assert json.loads(data.run_config)["note"] == INJECT


def test_final_config_shows_full_prompt_demos_and_policy(data) -> None:
    by_slot = {(p.component, p.param): p for p in data.final}
    prompt = by_slot["answer", "prompt"]
    assert prompt.kind == "text" and prompt.text == INJECT  # in full, not shortened
    assert [json.loads(d) for d in prompt.demos] == [DEMO]
    assert prompt.changed_at == (0,)
    route = by_slot["route", "model"]
    assert route.kind == "policy" and route.changed_at == (2,) and "qwen" in route.text


def test_examples_labelled_by_accepted_step_same_ids(data) -> None:
    labels = [g.label for g in data.examples]
    assert labels == ["initial configuration", "after step 0 (accepted)",
                      "after step 2 (accepted)"]
    for g in data.examples:
        assert [x.example_id for x in g.examples] == ["e0", "e1", "e2"]
    assert data.examples[0].examples[1].answer == "initial-answer-1"


def test_config_key_matches_system_config_digest() -> None:
    system = make_system()
    config = system.default_config().with_value("route", "model", "smollm")
    assert config_key(system.name, config.to_json(), []) == config.digest
    from coalign.optimize._selectors import policy_suffix

    digest = "ab" * 32  # the frozen reward of the route.model selector: part of the key
    assert config_key(system.name, config.to_json(), [["route", "model"]],
                      {"route.model": digest}) == (
        config.digest + policy_suffix({("route", "model"): digest}))


def test_missing_parts_are_listed_and_the_rest_still_built(tmp_path) -> None:
    populate(tmp_path, meta=False, traces=False)
    with RunStore(tmp_path, create=False) as store:
        d = report.build_report_data(store)
    assert len(d.steps) == 4 and len(d.costs) == 4
    assert d.system is None and d.result is None and d.alignment == () and d.examples == ()
    joined = "\n".join(d.missing)
    for part in ("system name", "run configuration", "alignment", "test result",
                 "example answers"):
        assert part in joined
    assert d.examples == ()


def test_empty_store_builds_an_empty_report(tmp_path) -> None:
    RunStore(tmp_path).close()
    with RunStore(tmp_path, create=False) as store:
        d = report.build_report_data(store)
    assert d.steps == () and d.curve == () and d.costs == () and d.final == ()
    assert any("optimizer steps" in m for m in d.missing)
    assert any("cost ledger" in m for m in d.missing)


def test_stage1_account_gives_costs_before_any_step(tmp_path) -> None:
    account = CostAccount(["a", "b"])
    trace = Trace("e0", "k", {}, [Step("a", 0, {}, {}), Step("b", 0, {}, {})])
    trace.steps[0].usage.calls = 2
    account.add_traces("lrf_train", [trace, trace])
    with RunStore(tmp_path) as store:
        store.set_meta("stage1_account", account.to_json())
        d = report.build_report_data(store)
    assert [(c.phase, c.runs, c.llm_calls) for c in d.costs] == [("lrf_train", 2.0, 4)]
    assert d.cost_source.startswith("stage 1 only")


def test_value_summaries() -> None:
    assert summarize_value({"instruction": "x " * 200, "demos": []}).endswith("…")
    assert summarize_value({"safetensors_b64": "QUJD"}) == "weights (4 base64 chars)"
    assert summarize_value(3) == "3" and summarize_value("qwen") == "qwen"
    assert summarize_value("line\nbreak") == "line break"


def test_curve_skips_records_without_scores() -> None:
    rows = step_rows([(0, "rejected", {"component": "a", "param": "p"}),
                      (1, "accepted", {"val_before": 0.1, "val_after": 0.2})])
    assert [(p.step, p.score) for p in curve(rows)] == [(-1, 0.1), (1, 0.2)]


def test_an_early_stopped_validation_says_on_how_many_inputs() -> None:
    from coalign.optimize._loop import REJECTED, REJECTED_EARLY

    rows = step_rows([(0, "rejected", {"reason": REJECTED_EARLY, "val_checked": 25,
                                       "val_before": 0.3, "val_after": 0.2}),
                      (1, "rejected", {"reason": REJECTED, "val_checked": 100})])
    assert rows[0].reason == (f"{REJECTED_EARLY} (on the first 25 validation inputs; val after "
                              "estimated)")
    assert rows[1].reason == REJECTED


def test_a_ledger_recorded_before_cache_hits_shows_none(data) -> None:
    import dataclasses

    from coalign.report._costs import cost_rows

    rows = cost_rows({"lrf_train": 120.0}, {"lrf_train": 360})
    assert rows[0].cache_hits is None
    assert dataclasses.replace(data, costs=rows).total_cache_hits is None


def test_a_switch_with_its_siblings_reset_says_so() -> None:
    rec = {"component": "answerer", "param": "model", "value": "qwen", "reset": ["prompt"],
           "val_before": 0.5, "val_after": 0.6, "reason": "validation improved"}
    row, older = step_rows([(0, "accepted", rec), (1, "rejected", {**rec, "reset": None})])
    assert row.value == "qwen (prompt back at the starting value)" and row.candidates == ()
    scored = {**rec, "variants": [{"reset": [], "local_reward": 0.2},
                                  {"reset": ["prompt"], "local_reward": 0.7}, {"reset": []}]}
    assert step_rows([(0, "accepted", scored)])[0].candidates == (
        ("qwen (as proposed)", 0.2), ("qwen (prompt back at the starting value)", 0.7))
    assert older.value == "qwen"  # ledgers written before coupled switches have no reset


def test_report_reads_a_bounded_sample_of_traces(tmp_path) -> None:
    # a large run: 30 configs x 200 validation traces; the report reads 3 per config, the same
    # examples across configs, in the order the configs were first validated
    with RunStore(tmp_path) as store:
        for c in range(30):
            for e in range(200):
                ex = (e + c) % 200 if c % 2 else e  # stored in varying example order
                store.put_trace("val", Trace(f"ex{ex}", f"cfg{c:02d}", {"q": "x" * 500},
                                             state={"a": str(ex)}, reward=0.5))
        store.put_trace("val", Trace("other", "cfg-late", {"q": "y"}, state={"a": "z"}))
    with RunStore(tmp_path, readonly=True) as store:
        sample = store.trace_sample("val", 3)
    by_config: dict[str, list[str]] = {}
    for t in sample:
        by_config.setdefault(t.config_digest, []).append(t.example_id)
    assert list(by_config) == [f"cfg{c:02d}" for c in range(30)] + ["cfg-late"]
    assert all(ids == ["ex0", "ex1", "ex2"] for k, ids in by_config.items() if k != "cfg-late")
    assert by_config["cfg-late"] == ["other"]  # validated on none of them: its own first
    assert len(sample) == 91


def _charts(tmp_path):
    populate_charts(tmp_path)
    with RunStore(tmp_path, readonly=True) as store:
        return report.build_report_data(store)


def test_anytime_points_carry_runs_spent_and_the_current_test_metric(tmp_path) -> None:
    d = _charts(tmp_path)
    assert d.metric == METRIC_INJECT
    # x: stage 1's account before step 0, then each step's ledger total
    assert [p.runs for p in d.curve] == [120.0, 172.0, 188.0, 232.0, 240.0]
    # the unoptimized system's test (result), then each accepted config's, held when rejected
    assert [p.test for p in d.curve] == [0.25, 0.5625, 0.5625, 0.75, 0.75]


def test_each_accepted_step_has_its_test_before_and_after(tmp_path) -> None:
    d = _charts(tmp_path)
    assert [(s.step, s.component, s.test_before, s.test_after) for s in d.step_tests] == [
        (0, "answer", 0.25, 0.5625), (2, "route", 0.5625, 0.75)]
    assert (d.step_tests[0].val_before, d.step_tests[0].val_after) == (0.40, 0.50)


def test_test_scores_are_matched_by_stored_config_not_by_system_name(tmp_path) -> None:
    # a factory system ("module:function") names its System otherwise: the digest cannot be
    # recomputed from the run config's name, but the configs evaluated on test are stored
    populate_charts(tmp_path)
    with RunStore(tmp_path, create=False) as store:
        store.set_meta("system", "my_pkg.systems:build")
        d = report.build_report_data(store)
    assert [s.step for s in d.step_tests] == [0, 2] and len(d.routing) == 3
    assert [g.label for g in d.examples][1:] == ["after step 0 (accepted)",
                                                 "after step 2 (accepted)"]


def test_a_partial_test_evaluation_is_no_score(tmp_path) -> None:
    populate_charts(tmp_path)
    with RunStore(tmp_path, create=False) as store:  # one more test example than was scored
        store.set_meta("result", {**store.get_meta("result"), "test_size": TEST_SIZE + 1})
        d = report.build_report_data(store)
    assert d.step_tests == () and [p.test for p in d.curve] == [0.25, None, None, None, None]


def test_routing_shares_quality_and_cost_per_option(tmp_path) -> None:
    d = _charts(tmp_path)
    rows = [(r.slot, r.option, r.inputs, r.share, r.tokens, r.seconds) for r in d.routing]
    assert rows == [("route.model", "qwen", 2, 0.5, 100.0, 1.2),
                    ("route.model", OPTION_INJECT, 1, 0.25, 40.0, 0.3),
                    ("route.model", "smollm", 1, 0.25, 40.0, 0.3)]
    assert all(r.quality == 0.75 for r in d.routing)
    assert d.routing_source == "the final system on the test split"


def test_routing_falls_back_to_validation_traces_and_skips_cache_hits() -> None:
    from coalign.report._routing import routing_rows

    traces = [Trace(f"e{i}", "k", {}, [Step("a", 0, {}, {}, choices={"m": m})], reward=r)
              for i, (m, r) in enumerate([("x", 1.0), ("y", 0.0), ("x", 0.5)])]
    traces[0].steps[0].usage.calls, traces[0].steps[0].usage.prompt_tokens = 1, 50
    traces[2].steps[0].usage.cache_hits = 1  # answered by the cache: no tokens to average
    x, y = routing_rows(traces)
    assert (x.option, x.inputs, x.quality, x.tokens) == ("x", 2, 0.75, 50.0)
    assert (y.option, y.share, y.tokens) == ("y", 1 / 3, None)


def test_cost_phases_split_by_component(tmp_path) -> None:
    d = _charts(tmp_path)
    split = {c.phase: c.components for c in d.costs}
    assert split["lrf_train"] == (("answer", 90.0), ("route", 30.0))
    assert all(sum(r for _, r in c.components) == pytest.approx(c.runs) for c in d.costs)


def test_a_step_that_validated_nothing_is_skipped_not_rejected(data) -> None:
    # step 3 proposed no change: no candidate was validated, so the gate refused nothing
    assert [s.decision for s in data.steps] == ["accepted", "rejected", "accepted", "skipped"]
    assert (data.accepted, data.rejected, data.skipped) == (2, 1, 1)
    from coalign.optimize._outcome import REASONS, StepState

    # ledger format 1 (no step_state) reads the same; a stopped validation is a rejection
    rows = step_rows([(0, "rejected", {"reason": REASONS[StepState.ALREADY_REJECTED],
                                       "val_before": 0.5, "val_after": None}),
                      (1, "rejected", {"reason": REASONS[StepState.STOPPED_EARLY],
                                       "val_before": 0.5, "val_after": 0.41}),
                      (2, "rejected", {"reason": "no local reward yet", "val_before": 0.5})])
    assert [r.decision for r in rows] == ["skipped", "rejected", "skipped"]


def test_paired_intervals_are_the_gates_and_the_clis(tmp_path) -> None:
    from coalign.optimize import paired_bootstrap
    from tests.test_report_support import VAL_REWARDS

    d = _charts(tmp_path)
    # an accepted step against the config before it, on validation, with the run's seed (0)
    want = [paired_bootstrap(VAL_REWARDS[new], VAL_REWARDS[old], seed=0)[:3]
            for new, old in (("step0", "initial"), ("step2", "step0"))]
    assert [tuple(s.interval) for s in d.steps if s.accepted] == want
    assert [s.interval for s in d.steps if not s.accepted] == [None, None]  # not stored
    # the final system against the unoptimized one on test: what coalign optimize prints
    assert tuple(d.test_interval) == paired_bootstrap([0.75] * TEST_SIZE, [0.25] * TEST_SIZE,
                                                      seed=0)[:3]
    assert report.interval_text(*d.test_interval) == "+0.5000 [+0.5000, +0.5000]"


def test_alignment_on_a_handful_of_pairs_has_an_interval_and_is_marked() -> None:
    from coalign.report._alignment import min_pairs

    few, enough = report.alignment_rows({"a": {"pairs": 3, "accuracy": 1.0},
                                         "b": {"pairs": 40, "accuracy": 0.725}}, 10)
    assert few.too_few and few.interval == (pytest.approx(3 / (3 + 1.959964 ** 2)), 1.0)
    assert not enough.too_few and enough.interval == (pytest.approx(0.5717, abs=1e-4),
                                                      pytest.approx(0.8389, abs=1e-4))
    # the threshold is the run's own min_alignment_pairs, else the run config's default
    assert min_pairs({"budget": {"min_alignment_pairs": 4}}) == 4 and min_pairs(None) == 10


def test_front_of_the_validated_configs(tmp_path) -> None:
    d = _charts(tmp_path)
    got = [(p.label, p.quality_score, p.cost, p.start, p.final, p.on_front) for p in d.front]
    assert got == [("start (unoptimized)", pytest.approx(0.4), 1.0, True, False, True),
                   ("after step 0 (accepted)", 0.5, 2.0, False, False, False),  # dominated
                   ("after step 2 (accepted)", pytest.approx(0.55), 1.5, False, True, True)]
