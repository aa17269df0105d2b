"""The per-input cascade: its chain fitted on stored validation outcomes, run on replay."""

from pathlib import Path

import numpy as np
import pytest

from coalign.cascade import CANDIDATE_TAG, Cascade, answers, fit_chain, passes
from coalign.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_the_next_link_is_the_best_where_the_links_before_it_failed():
    scores = np.array([[1, 1, 0, 0],    # row 0 answers; fails inputs 2 and 3
                       [1, 1, 0, 1],    # best overall but only one of the failed inputs
                       [0, 0, 1, 1]])   # worst overall, best where row 0 fails
    passed = scores.astype(bool)
    assert fit_chain(scores, passed, 1) == [0, 2]
    assert fit_chain(scores, passed, 5) == [0, 2, 1]  # capped by the rows there are


def test_ties_go_to_the_row_that_passes_more_then_to_the_best_overall():
    scores = np.array([[1, 0, 0], [0, 0, 0], [0, 0, 0], [1, 1, 0]], dtype=float)
    passed = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0], [1, 0, 0]], dtype=bool)
    # on inputs 1-2 rows 1, 2 and 3 all score 0 there... row 3 scores 1 on input 1
    assert fit_chain(scores, passed, 1) == [0, 3]
    scores[3, 1] = 0
    assert fit_chain(scores, passed, 1) == [0, 1]  # passes input 1 where nothing scores


def test_the_first_passing_link_answers_and_none_passing_leaves_the_first():
    passed = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=bool)
    answer, ran = answers([0, 2, 1], passed)
    assert answer.tolist() == [0, 2, 0]
    assert ran.tolist() == [1, 2, 3]


def _job(run_dir: Path, iterations: int):
    from coalign.job import Job, parse_run_config

    raw = {"system": "code_gen", "data": "mbpp",
           "lm": f"replay:{ROOT / 'benchmarks' / 'tables' / 'code_gen_models'}",
           "backbone": "hashing", "split": {"train": 4, "val": 8, "test": 6, "seed": 1},
           "budget": {"iterations": iterations, "rollout_n": 0, "proposals": "local"}}
    return Job.open(parse_run_config(raw), run_dir)


def test_a_run_keeps_its_rejected_validations_and_fits_a_cascade_from_them(tmp_path):
    job = _job(tmp_path / "run", 6)
    job.optimizer.run()
    rejected = [row for _, state, row in job.store.steps()
                if state == "rejected" and row.get("val_rewards")]
    kept = job.store.traces(CANDIDATE_TAG)
    assert len(kept) == len(rejected) * len(job.val) > 0
    fit = job.fit_cascade(depth=2)
    assert fit.cascade.configs[0] == job.optimizer.config
    assert 2 <= fit.candidates and len(fit.cascade.configs) == min(3, fit.candidates)
    # a fallback answers only where it passes the example test and the first output fails
    # it: on MBPP a failing output scores 0, so the cascade cannot score below on validation
    assert fit.val_cascade >= fit.val_single
    assert fit.cost_ratio >= 1.0
    assert 1.0 <= fit.rerun_cost_ratio <= fit.cost_ratio
    final = job.optimizer.config.to_json()
    fallback = fit.cascade.configs[1].to_json()
    changed = [f"{comp}.{k}" for comp, ps in fallback.items() for k, v in ps.items()
               if final[comp][k] != v]
    # `vary` keeps a candidate only if it differs from the answer in those params alone
    assert job.fit_cascade(depth=2, vary=changed).cascade == fit.cascade
    alone = job.fit_cascade(depth=2, vary=changed[1:])
    assert alone.candidates == fit.candidates - 1
    assert fit.cascade.configs[1] not in alone.cascade.configs
    res = job.cascade_on_test(fit.cascade)
    single = job.on_test(job.optimizer.config, {})
    first = {t.example_id: t for t in single.traces}
    for e, trace, ran in zip(job.test, res.result.traces, res.ran, strict=True):
        if passes(job.task, first[e.id]):  # stood: the first link's trace, nothing more run
            assert ran == 1 and trace.reward == first[e.id].reward
            assert trace.state["final_code"] == first[e.id].state["final_code"]
        else:
            assert ran > 1
    assert res.cost_per_query_s >= single.cost_per_query_s
    # rerunning only what a fallback changes costs less than its whole run, never less than
    # the answer alone; on the examples that escalated the rest is the shared upstream
    from coalign.cascade import rerun_components

    fresh = rerun_components(job.task.system, fit.cascade.configs[0], fit.cascade.configs[1])
    assert fresh < {c.name for c in job.task.system.components}
    assert single.cost_per_query_s <= res.rerun_cost_per_query_s < res.cost_per_query_s
    again = job.cascade_on_test(fit.cascade)  # every link's traces are stored: no rerun
    assert again.result.resumed == sum(res.ran)
    assert again.result.mean_reward == res.result.mean_reward
    job.store.close()


def test_a_cascade_is_refused_without_fallbacks_depth_or_output_checks(tmp_path):
    from coalign.cascade import fit_cascade
    from coalign.store import RunStore
    from tests.selector_toy import selector_task

    task = selector_task()
    with pytest.raises(ConfigError, match="non-empty list"):
        Cascade.from_json(task.system, [])
    with RunStore(tmp_path / "run") as store:
        start = task.system.default_config()
        with pytest.raises(ConfigError, match="depth must be >= 1"):
            fit_cascade(task, store, start, [start], depth=0)
        with pytest.raises(ConfigError, match="declares no check"):
            fit_cascade(task, store, start, [start], depth=1)
        from coalign.tables import CandidateSpace

        code = CandidateSpace.load(ROOT / "benchmarks" / "tables" / "code_gen_models").task()
        start = code.system.default_config()
        with pytest.raises(ConfigError, match="no stored validation traces"):
            fit_cascade(code, store, start, [start], depth=1)


def test_export_with_a_cascade_then_evaluate_runs_it_from_the_cli(tmp_path):
    import json

    from coalign.cascade import evaluate_cascade
    from coalign.export import load_system
    from coalign.runner import load_dataset
    from coalign.runtime import Runtime
    from coalign.tables import Table
    from tests.test_cli_core import one_line_error, run_cli

    job = _job(tmp_path / "run", 6)
    job.optimizer.run()
    fit = job.fit_cascade(depth=1)
    task, store = job.task, job.store
    store.close()
    out = tmp_path / "system.json"
    done = run_cli("export", str(tmp_path / "run"), "--out", str(out), "--cascade", "1")
    assert done.returncode == 0, done.stderr
    assert "cascade: 1 fallback(s)" in done.stdout
    doc = json.loads(out.read_text())
    assert doc["cascade"] == json.loads(json.dumps(fit.to_json()))  # as fitted in the run
    loaded = load_system(out, task)
    assert loaded.cascade == fit.cascade
    table = ROOT / "benchmarks" / "tables" / "code_gen_models"
    got = tmp_path / "eval.json"
    ev = run_cli("evaluate", "code_gen", "--data", "mbpp", "--limit", "12", "--lm",
                 f"replay:{table}", "--config", str(out), "--run-dir", str(tmp_path / "ev"),
                 "--json", str(got))
    assert ev.returncode == 0, ev.stderr
    assert "cascade:" in ev.stdout and "ran a fallback" in ev.stdout
    examples = load_dataset("mbpp", 12)
    direct = evaluate_cascade(task, examples, fit.cascade,
                              Runtime(lms=Table(table).lms(), max_workers=1, seed=0))
    assert json.loads(got.read_text())["scores"] == {
        e.id: s for e, s in zip(examples, direct.result.scores, strict=True)}
    # a cascade whose first config is not the file's config is refused, in one line
    doc["cascade"]["configs"] = doc["cascade"]["configs"][1:] or [{}]
    doc["config"] = fit.cascade.configs[0].to_json()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    ev = run_cli("evaluate", "code_gen", "--data", "mbpp", "--limit", "2", "--lm",
                 f"replay:{table}", "--config", str(bad), "--run-dir", str(tmp_path / "ev2"))
    assert ev.returncode != 0
    assert "must start with 'config'" in one_line_error(ev)


def test_optimize_with_cascade_prints_the_cascade_on_test(tmp_path):
    import json

    from tests.test_cli_core import run_cli

    config = tmp_path / "run.json"
    config.write_text(json.dumps({
        "system": "code_gen", "data": "mbpp",
        "lm": f"replay:{ROOT / 'benchmarks' / 'tables' / 'code_gen_models'}",
        "backbone": "hashing", "split": {"train": 4, "val": 8, "test": 6, "seed": 1},
        "budget": {"iterations": 6, "rollout_n": 0, "proposals": "local"}}))
    done = run_cli("optimize", str(config), "--run-dir", str(tmp_path / "run"), "--cascade", "1")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())  # rich wraps long lines
    assert "cascade (1 fallback(s) of 1 validated configs): test pass@1 0.3333 against" in text
    assert "of test examples ran a fallback" in text


def test_a_fallback_reruns_the_components_it_changes_and_what_is_downstream():
    from coalign.cascade import rerun_components
    from coalign.systems import code_gen

    system = code_gen(models=("qwen2.5-0.5b", "qwen2.5-1.5b")).system
    start = system.default_config()
    everything = {c.name for c in system.components}
    assert rerun_components(system, start, start) == everything  # the answer runs in full
    reviser = start.with_value("reviser", "model", "qwen2.5-1.5b")
    assert rerun_components(system, start, reviser) == {"reviser"}  # nothing downstream of it
    generator = start.with_value("code_generator", "model", "qwen2.5-1.5b")
    assert rerun_components(system, start, generator) == {"code_generator", "executor",
                                                          "reviser"}

