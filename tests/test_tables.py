"""Replay tables: space, shards, build/resume and replay logic (a fake LM: pure logic only)."""

from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

import pytest

from coalign.backends import build_runtime
from coalign.errors import ConfigError
from coalign.runner import evaluate, load_dataset
from coalign.systems._multihop import ANSWER, EXTRACT, REWRITE
from coalign.tables import (
    CandidateSpace,
    ReplayMiss,
    Samples,
    ShardSet,
    Table,
    TableError,
    build_table,
)
from tests.fakes import FakeLM


def _answer(request) -> str:
    """Deterministic per request (sample index and temperature included)."""
    h = hashlib.sha256(repr(request).encode()).hexdigest()
    return f"ans {h[:6]}"


def make_space(n_questions: int = 3, samples: int = 1) -> CandidateSpace:
    ids = tuple(e.id for e in load_dataset("hotpotqa", limit=n_questions))
    return CandidateSpace(
        system="multihop_qa", dataset="hotpotqa", questions=ids,
        params={"question_rewriter.prompt": ({"instruction": REWRITE, "demos": []},),
                "retriever.k": (3, 1),
                "info_extractor.prompt": ({"instruction": EXTRACT, "demos": []},
                                          {"instruction": EXTRACT + " Be concise.", "demos": []}),
                "answer_generator.prompt": ({"instruction": ANSWER, "demos": []},
                                            {"instruction": "Short answer.", "demos": []})},
        options={"ks": [3, 1]}, samples=Samples(samples, 1.0))


def build(directory: Path, space: CandidateSpace, **kw):
    space.save(directory)
    lms: list[FakeLM] = []

    def factory(model: str) -> FakeLM:
        lms.append(FakeLM(_answer, name=f"llamacpp:{model}"))
        return lms[-1]

    kw.setdefault("level", "samples")  # the library's default is greedy, as the CLI's
    report = build_table(directory, lm_factory=factory, **kw)
    return report, sum(lm.calls for lm in lms)


def entries(directory: Path, space: CandidateSpace) -> dict[str, str]:
    return {k: e.text for k, e in ShardSet(directory, space.system, space.digest).entries.items()}


def test_space_checks_and_roundtrip(tmp_path: Path) -> None:
    space = make_space()
    assert space.n_configs() == 8
    loaded = CandidateSpace.load(space.save(tmp_path).parent)
    assert loaded.digest == space.digest and loaded.questions == space.questions
    # a directory given as a string, as users type it
    assert CandidateSpace.load(str(space.save(str(tmp_path / "s")).parent)).digest == space.digest
    with pytest.raises(ConfigError, match="first value of retriever.k"):
        CandidateSpace(system="multihop_qa", dataset="hotpotqa", questions=("a",),
                       params={"retriever.k": (5, 3)})
    with pytest.raises(ConfigError, match="has no param 'temperature'"):
        CandidateSpace(system="multihop_qa", dataset="hotpotqa", questions=("a",),
                       params={"retriever.temperature": (1,)})
    text = (tmp_path / "space.json").read_text().replace('"k": [\n  3', '"k": [\n  5')
    (tmp_path / "space.json").write_text(text.replace("Short answer.", "Tiny answer."))
    with pytest.raises(ConfigError, match="edited by hand"):
        CandidateSpace.load(tmp_path)


def test_tree_counts_every_path_and_samples(tmp_path: Path) -> None:
    space = make_space(n_questions=1, samples=1)
    report, calls = build(tmp_path, space)
    assert report.done == 1 and report.built_now == 1
    # greedy paths 1*2*2*2 = 8; a sample at the rewriter adds 1*2*2*2, at the extractor
    # 2 (passage sets) * 2 values * 1 sample * 2 answers, at the answer 8 greedy nodes * 1
    assert Table(tmp_path).shards.done[space.questions[0], "samples"].paths == 8 + 8 + 8 + 8
    assert calls == len(entries(tmp_path, space)) > 0


def test_killed_build_resumes_from_a_fresh_clone_with_no_repeated_call(tmp_path: Path) -> None:
    space = make_space(n_questions=3)
    straight, straight_calls = build(tmp_path / "straight", space)
    part, first_calls = build(tmp_path / "a", space, limit=1)
    assert part.stopped_early and part.done == 1
    clone = tmp_path / "clone"  # what git clone brings: space.json and the sealed shards only
    shutil.copytree(tmp_path / "a", clone, ignore=shutil.ignore_patterns("journal-*"))
    resumed, resumed_calls = build(clone, space)
    assert resumed.done == 3 and resumed.built_now == 2
    assert first_calls + resumed_calls == straight_calls  # zero repeated calls
    assert entries(clone, space) == entries(tmp_path / "straight", space)
    again, again_calls = build(clone, space)
    assert again_calls == 0 and again.built_now == 0 and not again.shards_written


def wider(space: CandidateSpace, **changes) -> CandidateSpace:
    params = dict(space.params)
    key = "answer_generator.prompt"
    params[key] = (*params[key], {"instruction": "Tiny answer.", "demos": []})
    return CandidateSpace(system=space.system, dataset=space.dataset, questions=space.questions,
                          params=params, options=changes.get("options", space.options),
                          samples=space.samples)


def test_a_wider_space_copies_a_donor_table_s_answers_and_calls_only_the_new(
        tmp_path: Path) -> None:
    narrow = make_space(n_questions=2, samples=0)
    _, narrow_calls = build(tmp_path / "narrow", narrow)
    wide = wider(narrow)
    straight, straight_calls = build(tmp_path / "straight", wide)
    reused, reused_calls = build(tmp_path / "wide", wide, reuse=[tmp_path / "narrow"])
    assert reused.done == 2 and reused.reused == narrow_calls > 0
    assert reused_calls == straight_calls - narrow_calls  # only the new candidate's calls
    # the copies live in the wide table itself: replay needs no donor
    assert entries(tmp_path / "wide", wide) == entries(tmp_path / "straight", wide)
    assert straight.reused == 0


def with_models(space: CandidateSpace, models: list[str]) -> CandidateSpace:
    params = {**space.params, "answer_generator.model": tuple(models)}
    return CandidateSpace(system=space.system, dataset=space.dataset, questions=space.questions,
                          params=params, model=models[0],
                          options={**space.options, "models": models}, samples=space.samples)


def test_a_one_model_table_donates_to_a_model_choice_table(tmp_path: Path) -> None:
    narrow = make_space(n_questions=2, samples=0)
    _, narrow_calls = build(tmp_path / "narrow", narrow)
    both = with_models(narrow, ["qwen2.5-0.5b", "smollm2-135m"])
    assert both.models == ("qwen2.5-0.5b", "smollm2-135m") and narrow.models == ("qwen2.5-0.5b",)
    straight, straight_calls = build(tmp_path / "straight", both)
    reused, reused_calls = build(tmp_path / "both", both, reuse=[tmp_path / "narrow"])
    assert reused.reused == narrow_calls and reused_calls == straight_calls - narrow_calls > 0
    assert entries(tmp_path / "both", both) == entries(tmp_path / "straight", both)
    # the other way round: the donor runs a model the one-model table does not
    with pytest.raises(ConfigError, match=r"--reuse .*both: it runs model\(s\) \['smollm2-135m'\]"):
        build(tmp_path / "narrow2", narrow, reuse=[tmp_path / "both"])


def test_untabled_choices_and_texts_stay_at_their_start_on_replay() -> None:
    """A model Choice the space leaves out (the rewriter's, the extractor's) takes only the
    start model, so no optimizer can ask the table for a call it does not hold."""
    space = with_models(make_space(n_questions=1, samples=0), ["qwen2.5-0.5b", "smollm2-135m"])
    system = space.task().system
    assert system.component("answer_generator").params["model"].options == (
        "qwen2.5-0.5b", "smollm2-135m")
    for name in ("question_rewriter", "info_extractor"):
        assert system.component(name).params["model"].options == ("qwen2.5-0.5b",)
    assert space.task(finite=False).system.component("info_extractor").params[
        "model"].options == ("qwen2.5-0.5b", "smollm2-135m")


def test_a_donor_of_another_layout_is_refused_in_one_line(tmp_path: Path) -> None:
    narrow = make_space(n_questions=1, samples=0)
    build(tmp_path / "narrow", narrow)
    other = wider(narrow, options={**narrow.options, "layout": "instruction_first"})
    other.save(tmp_path / "other")
    with pytest.raises(ConfigError, match=r"--reuse .*narrow: its options .* differs"):
        build_table(tmp_path / "other", reuse=[tmp_path / "narrow"])
    assert not (tmp_path / "other" / "shards").exists() or not any(
        (tmp_path / "other" / "shards").iterdir())


def test_a_donor_with_other_candidate_lists_donates_the_requests_both_make(
        tmp_path: Path) -> None:
    """A donor whose ``ks`` lists more candidates (the wide HotpotQA table beside the
    model-choice one) is accepted; its k=3 responses answer this table's k=3 requests."""
    donor = make_space(n_questions=1, samples=0)  # ks [3, 1]
    narrow = CandidateSpace(system=donor.system, dataset=donor.dataset,
                            questions=donor.questions,
                            params={**donor.params, "retriever.k": (3,)},
                            options={**donor.options, "ks": [3]}, samples=donor.samples)
    _, donor_calls = build(tmp_path / "donor", donor)
    straight, straight_calls = build(tmp_path / "straight", narrow)
    reused, reused_calls = build(tmp_path / "reused", narrow, reuse=[tmp_path / "donor"])
    assert reused.reused == straight_calls > 0 and reused_calls == 0
    assert donor_calls > straight_calls
    assert entries(tmp_path / "reused", narrow) == entries(tmp_path / "straight", narrow)


def test_journal_of_a_killed_build_is_sealed_on_restart(tmp_path: Path) -> None:
    space = make_space(n_questions=1)
    space.save(tmp_path)
    shards = ShardSet(tmp_path, space.system, space.digest, writer=True)
    from coalign.tables import Entry

    shards.append("k1", Entry("one", 1, 1, "m", 0.1))
    shards.append("k2", Entry("two", 1, 1, "m", 0.1))
    journal = next(tmp_path.glob("journal-*.jsonl"))
    shards._journal.close()  # the process dies: no seal; its last line torn mid-write
    shards._journal = None
    with journal.open("a") as f:
        f.write('{"key": "k3", "te')
    # another process id would own a new journal; recovery reads this one
    recovered = ShardSet(tmp_path, space.system, space.digest, writer=True)
    assert {k: e.text for k, e in recovered.entries.items()} == {"k1": "one", "k2": "two"}
    assert not journal.exists() and len(list((tmp_path / "shards").iterdir())) == 1


def test_bad_shards_are_refused_in_one_line_and_never_overwritten(tmp_path: Path) -> None:
    space = make_space(n_questions=1)
    build(tmp_path, space)
    shard = next((tmp_path / "shards").glob("*.jsonl.gz"))
    good = shard.read_bytes()
    shard.write_bytes(good[: len(good) // 2])  # truncated
    with pytest.raises(TableError, match="corrupt or truncated") as exc:
        Table(tmp_path)
    assert "\n" not in str(exc.value)
    assert shard.read_bytes() == good[: len(good) // 2]  # left for the user to restore
    raw = gzip.decompress(good).replace(b"ans ", b"ANS ")
    shard.write_bytes(gzip.compress(raw))
    with pytest.raises(TableError, match="does not match its name"):
        Table(tmp_path)
    shard.write_bytes(good)
    other = make_space(n_questions=1, samples=2)  # another candidate space
    other_dir = tmp_path / "other"
    other.save(other_dir)
    (other_dir / "shards").mkdir()
    shutil.copy(shard, other_dir / "shards" / shard.name)
    with pytest.raises(TableError, match="belongs to candidate space"):
        Table(other_dir)


def test_replay_answers_in_space_and_names_a_request_outside_it(tmp_path: Path) -> None:
    space = make_space(n_questions=2)
    build(tmp_path, space)
    task = space.task(finite=False)  # can ask what the table does not hold
    examples = load_dataset("hotpotqa", limit=2)
    runtime, meter = build_runtime(["qwen2.5-0.5b"], None, lm=f"replay:{tmp_path}")
    config = task.system.default_config().with_value("retriever", "k", 1)
    result = evaluate(task, examples, config, runtime)
    assert len(result.traces) == 2 and result.usage.calls > 0 and result.usage.cache_hits == 0
    outside = config.with_value("answer_generator", "prompt", "Never tabled.")
    with pytest.raises(ReplayMiss) as exc:
        evaluate(task, examples[:1], outside, runtime)
    message = str(exc.value)
    assert "answer_generator" in message and examples[0].id in message
    assert "Never tabled." in message and "\n" not in message
    with pytest.raises(ReplayMiss, match="question_rewriter"):
        evaluate(task, load_dataset("hotpotqa", limit=3)[2:], config, runtime)


def test_cli_status_replay_evaluate_and_bad_input_in_one_line(tmp_path: Path) -> None:
    import json

    from tests.test_cli_core import one_line_error, run_cli

    space = make_space(n_questions=2)
    build(tmp_path / "t", space, level="greedy")
    status = run_cli("table", "status", str(tmp_path / "t"), "--json")
    assert status.returncode == 0, status.stderr
    levels = {lv["level"]: lv for lv in json.loads(status.stdout)["levels"]}
    assert levels["greedy"]["done"] == 2 and levels["samples"]["done"] == 0
    out = tmp_path / "eval.json"
    ok = run_cli("evaluate", "multihop_qa", "--data", "hotpotqa", "--limit", "2", "--lm",
                 f"replay:{tmp_path / 't'}", "--run-dir", str(tmp_path / "run"), "--json",
                 str(out))
    assert ok.returncode == 0, ok.stderr
    assert set(json.loads(out.read_text())["scores"]) == set(space.questions)
    # a config outside the space, a question outside the pool, a foreign system, no table
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"answer_generator": {"prompt": "Not in the table."}}))
    err = one_line_error(run_cli("evaluate", "multihop_qa", "--data", "hotpotqa", "--limit",
                                 "1", "--lm", f"replay:{tmp_path / 't'}", "--config", str(cfg),
                                 "--run-dir", str(tmp_path / "run2")))
    assert "answer_generator.prompt" in err and "not one of the param's 2 candidates" in err
    err = one_line_error(run_cli("evaluate", "multihop_qa", "--data", "hotpotqa", "--limit",
                                 "3", "--lm", f"replay:{tmp_path / 't'}", "--run-dir",
                                 str(tmp_path / "run3")))
    assert "question_rewriter" in err and "not in replay table" in err
    err = one_line_error(run_cli("evaluate", "pubmedqa_select", "--lm",
                                 f"replay:{tmp_path / 't'}", "--run-dir", str(tmp_path / "r4")))
    assert "is for system 'multihop_qa'" in err
    err = one_line_error(run_cli("table", "status", str(tmp_path / "none")))
    assert "not a replay table" in err
    shard = next((tmp_path / "t" / "shards").glob("*.jsonl.gz"))
    shard.write_bytes(shard.read_bytes()[:100])
    err = one_line_error(run_cli("table", "status", str(tmp_path / "t")))
    assert "corrupt or truncated" in err and shard.name in err
    err = one_line_error(run_cli("table", "build", str(tmp_path / "t"), "--part", "x"))
    assert "--part" in err


def test_build_parts_split_the_pool(tmp_path: Path) -> None:
    space = make_space(n_questions=3)
    first, _ = build(tmp_path, space, level="greedy", part=(0, 2))
    assert first.total == 2 and first.done == 2
    second, _ = build(tmp_path, space, level="greedy", part=(1, 2))
    assert second.total == 1 and second.done == 1
    table = Table(tmp_path)
    assert table.status().levels[0].done == 3 and table.status().levels[1].done == 0
    with pytest.raises(ConfigError, match="build part 2/2"):
        build_table(tmp_path, part=(2, 2))


def test_optimizers_on_replay_stay_inside_the_table(tmp_path: Path) -> None:
    """The loop, random search, grid search and REINFORCE run on a table with zero misses: a
    finite task's text params choose among the table's candidates."""
    from coalign.job import Job, parse_run_config
    from coalign.optimize._baselines import grid_search, random_search
    from coalign.optimize._reinforce import reinforce_search

    space = make_space(n_questions=6, samples=2)
    build(tmp_path / "t", space)
    cfg = parse_run_config({
        "system": "multihop_qa", "data": "hotpotqa", "lm": f"replay:{tmp_path / 't'}",
        "backbone": "hashing", "split": {"train": 2, "val": 2, "test": 2},
        "budget": {"iterations": 2, "search_size": 2, "fresh_inputs": 2, "rollout_n": 2}})
    job = Job.open(cfg, tmp_path / "run")
    steps = job.optimizer.run()
    assert steps and sum(job.optimizer.ledger().llm_calls.values()) > 0  # replayed calls
    prompts = space.params["answer_generator.prompt"]
    final = job.optimizer.config.to_json()["answer_generator"]["prompt"]
    assert final in [dict(v) for v in prompts]
    before, after = job.evaluate_test()
    assert 0 <= before.mean_reward <= 1 and 0 <= after.mean_reward <= 1

    task, runtime = job.task, job.optimizer.runtime
    grid = grid_search(task, job.val, runtime, budget_runs=1000)
    assert len(grid.tried) == space.n_configs() == 8
    assert random_search(task, job.val, runtime, budget_runs=12, seed=1).tried
    assert reinforce_search(task, job.train, job.val, runtime, budget_runs=12).best_score >= 0
    with pytest.raises(ConfigError, match="'proposer' is not used on replay"):
        Job.open(cfg.model_copy(update={"proposer": "qwen2.5-0.5b"}), tmp_path / "run2")

    # a greedy-only table: rollouts must draw from the candidates alone
    build(tmp_path / "g", space, level="greedy")
    raw = {**cfg.model_dump(exclude_defaults=True), "lm": f"replay:{tmp_path / 'g'}"}
    with pytest.raises(ConfigError, match="samples for 0 of its 6 questions"):
        Job.open(parse_run_config(raw), tmp_path / "run3")
    raw["budget"] = {**raw["budget"], "rollout_n": 0}
    greedy_job = Job.open(parse_run_config(raw), tmp_path / "run4")
    assert greedy_job.optimizer.run()
    with pytest.raises(ConfigError, match="use 0 .candidates only. or >= 2"):
        parse_run_config({**raw, "budget": {"rollout_n": 1}})
    with pytest.raises(ConfigError, match="'budget.completions': a replay table holds one"):
        Job.open(parse_run_config({**raw, "budget": {**raw["budget"], "completions": 2}}),
                 tmp_path / "run5")
    assert not (tmp_path / "run5").exists()


def test_text_candidates_make_a_finite_space() -> None:
    from coalign.params import Text, TextValue

    spec = Text("a", candidates=["a", TextValue("b", ({"q": "x", "a": "y"},))])
    assert spec.validate("a") == TextValue("a") and spec.space()["candidates"] == 2
    with pytest.raises(ConfigError, match="'c' .* not one of the param's 2 candidates"):
        spec.validate("c")
    with pytest.raises(ConfigError, match="not one of"):
        Text("z", candidates=["a", "b"])  # the start must be a candidate
    finite = make_space().task()
    answer = finite.system.component("answer_generator").params["prompt"]
    assert [v.instruction for v in answer.candidates] == [ANSWER, "Short answer."]
    assert finite.system.component("retriever").params["k"].options == (3, 1)


def test_rewards_score_every_config_on_every_finished_question(tmp_path: Path) -> None:
    space = make_space(n_questions=3, samples=0)
    gold = {e.inputs["question"]: e.target for e in load_dataset("hotpotqa", limit=3)}

    def answer(request) -> str:  # the "Short answer." candidate answers right, nothing else
        text = " ".join(m.content for m in request.messages)
        if "Short answer." not in text:
            return _answer(request)
        return next(a for q, a in gold.items() if q in text)

    space.save(tmp_path)
    build_table(tmp_path, level="greedy", limit=2,
                lm_factory=lambda m: FakeLM(answer, name=f"llamacpp:{m}"))
    rewards = Table(tmp_path).rewards()
    assert len(rewards.questions) == 2 and rewards.scores.shape == (8, 2)
    right = [c.to_json()["answer_generator"]["prompt"]["instruction"] == "Short answer."
             for c in rewards.configs]
    assert sum(right) == 4
    assert [list(row) for row in rewards.scores] == [[1.0, 1.0] if r else [0.0, 0.0]
                                                     for r in right]
    assert rewards.means()[0] == 0.0 and rewards.best() == right.index(True)
    assert rewards.oracle() == 1.0 and rewards.oracle([0]) == 1.0


def test_the_build_rate_leaves_out_questions_copied_from_a_donor() -> None:
    from coalign.tables._shards import Done
    from coalign.tables._table import llm_hours_per_question

    copied = [Done(f"q{i}", 8, 0, 0.0) for i in range(100)]  # a grown table's first 100
    built = [Done("q100", 8, 30, 5400.0), Done("q101", 8, 10, 1800.0)]
    assert llm_hours_per_question(copied + built) == 1.0  # (1.5 h + 0.5 h) / 2, not / 102
    assert llm_hours_per_question(copied) is None and llm_hours_per_question([]) is None
