import json

import pytest

from coalign.errors import ConfigError
from coalign.job import load_run_config, parse_run_config
from tests.test_cli_core import one_line_error, run_cli


def test_defaults_and_yaml(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("system: multihop_qa\nsplit: {train: 3, val: 2, test: 2}\n"
                    "budget: {iterations: 1}\ngate: bootstrap\n")
    cfg = load_run_config(path)
    assert cfg.split.train == 3 and cfg.budget.iterations == 1 and cfg.gate == "bootstrap"
    assert cfg.budget.search_size == 4  # default kept
    same = parse_run_config(json.loads(cfg.model_dump_json()))
    assert same.digest == cfg.digest


def test_digest_ignores_settings_left_at_their_default():
    # a setting added in a later release (at its default) must not orphan existing run dirs
    plain = parse_run_config({"budget": {"iterations": 2}})
    explicit = parse_run_config({"budget": {"iterations": 2, "text_alternatives": 0}})
    changed = parse_run_config({"budget": {"iterations": 2, "text_alternatives": 1}})
    assert plain.digest == explicit.digest != changed.digest


@pytest.mark.parametrize("raw,match", [
    ({"budget": {"iterations": -1}}, "field 'budget.iterations'"),
    ({"gate": "lenient"}, "field 'gate'"),
    ({"gate_confidence": 1.0}, "field 'gate_confidence'"),
    ({"split": {"train": 1, "bogus": 2}}, "field 'split.bogus'"),
])
def test_bad_run_configs_name_the_field(raw, match):
    with pytest.raises(ConfigError, match=match):
        parse_run_config(raw)


def test_missing_and_malformed_config_files(tmp_path):
    with pytest.raises(ConfigError, match="run config not found"):
        load_run_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("system: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_run_config(bad)


def test_cli_optimize_errors_are_one_line(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("system: nosuch\n")
    err = one_line_error(run_cli("optimize", str(cfg), "--run-dir", str(tmp_path / "r")))
    assert "unknown system 'nosuch'" in err
    err = one_line_error(run_cli("resume", str(tmp_path / "absent")))
    assert "no run store" in err


def test_start_values_become_the_unoptimized_config():
    from coalign.systems import SYSTEMS

    task = SYSTEMS["multihop_qa"]("qwen2.5-0.5b")
    before = task.system.default_config()
    task.system.set_defaults({"answer_generator": {"prompt": "Answer the question."},
                              "retriever": {"k": 5}})
    start = task.system.default_config()
    assert start["answer_generator"]["prompt"].instruction == "Answer the question."
    assert start["retriever"]["k"] == 5 and start.digest != before.digest
    assert start["info_extractor"] == before["info_extractor"]


@pytest.mark.parametrize("start,match", [
    ({"answer_writer": {"prompt": "x"}}, "start.*unknown component 'answer_writer'"),
    ({"retriever": {"k": 4}}, "start.*retriever"),
    ({"answer_generator": {"tone": "x"}}, "start.*unknown param 'tone'"),
])
def test_bad_start_values_are_refused_before_the_run_dir_is_written(tmp_path, start, match):
    from coalign.job import Job

    cfg = parse_run_config({"start": start, "split": {"train": 1, "val": 1, "test": 1}})
    with pytest.raises(ConfigError, match=match):
        Job.open(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_demo_config_is_valid_and_moves_only_the_generators_model_from_the_small_one():
    from coalign.cli._optimize import DEMO
    from coalign.optimize._settings import targets
    from coalign.systems import SYSTEMS

    cfg = parse_run_config(DEMO, "demo config")
    task = SYSTEMS[cfg.system](cfg.model, models=cfg.models)
    assert targets(task.system, cfg.components) == [("code_generator", "model")]
    assert task.system.default_config()["code_generator"]["model"] == "qwen2.5-0.5b"
    assert cfg.models == ["qwen2.5-0.5b", "qwen2.5-1.5b"] and cfg.data == "mbpp"


def test_choice_costs_map_onto_the_per_instance_options():
    from coalign.job import choice_costs
    from coalign.systems import SYSTEMS

    task = SYSTEMS["pubmedqa_select"]("qwen2.5-0.5b")
    got = choice_costs(task, {"answerer.model": {"smollm2-135m": 0.3, "qwen2.5-0.5b": 1.0}})
    assert got == {("answerer", "model"): {"smollm2-135m": 0.3, "qwen2.5-0.5b": 1.0}}


@pytest.mark.parametrize("costs,match", [
    ({"judge.model": {}}, "choice_costs.*judge.model: unknown component 'judge'"),
    ({"answerer.prompt": {}}, "answerer.prompt: not a per-instance Choice"),
    ({"answerer.model": {"gpt-5": 1.0}}, "unknown option 'gpt-5'"),
    ({"answerer.model": {"smollm2-135m": -1.0}}, "must be a finite number >= 0"),
])
def test_bad_choice_costs_are_refused_before_the_run_dir_is_written(tmp_path, costs, match):
    from coalign.job import Job

    cfg = parse_run_config({"system": "pubmedqa_select", "data": "pubmedqa", "cost_weight": 0.1,
                            "choice_costs": costs, "split": {"train": 1, "val": 1, "test": 1}})
    with pytest.raises(ConfigError, match=match):
        Job.open(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_run_dir_made_for_other_system_params_is_refused(tmp_path, monkeypatch):
    # a system that gained a knob since the run dir was made keeps its name and config digest
    from coalign.job import Job
    from coalign.systems import SYSTEMS, multihop_qa

    cfg = parse_run_config({"system": "multihop_qa", "data": "world",
                            "split": {"train": 1, "val": 1, "test": 1}})
    Job.open(cfg, tmp_path / "run")
    two = ("query", "question")
    monkeypatch.setitem(SYSTEMS, "multihop_qa", lambda m: multihop_qa(m, query_sources=two))
    with pytest.raises(ConfigError, match="made for a 'multihop_qa' with other params"):
        Job.open(cfg, tmp_path / "run")
    monkeypatch.undo()
    Job.open(cfg, tmp_path / "run")  # the same params reopen it


def test_gate_confidence_reaches_the_loop_and_keeps_old_digests(tmp_path):
    from coalign.job import Job

    raw = {"system": "multihop_qa", "data": "world", "gate": "bootstrap",
           "split": {"train": 1, "val": 1, "test": 1}}
    assert parse_run_config(raw).digest == parse_run_config({**raw, "gate_confidence": 0.9}).digest
    cfg = parse_run_config({**raw, "gate_confidence": 0.95})
    gate = Job.open(cfg, tmp_path / "run").optimizer.s.gate
    assert (gate.kind, gate.confidence) == ("bootstrap", 0.95)


def test_reward_embedding_reaches_the_local_rewards_and_keeps_old_digests(tmp_path):
    from coalign.job import Job

    raw = {"system": "multihop_qa", "data": "world", "split": {"train": 1, "val": 1, "test": 1}}
    assert parse_run_config(raw).digest == parse_run_config(
        {**raw, "reward_embedding": False}).digest
    plain = Job.open(parse_run_config(raw), tmp_path / "a")
    assert not plain.optimizer.reward.config.use_embedding  # the default: features only
    embedded = Job.open(parse_run_config({**raw, "reward_embedding": True}), tmp_path / "b")
    assert embedded.optimizer.reward.config.use_embedding


@pytest.mark.parametrize("bad, match", [
    ({"components": ["nosuch"]}, "unknown component 'nosuch'"),
    ({"proposer": "no-such-model"}, "not a bundled model"),
])
def test_a_config_refused_while_building_the_loop_leaves_the_run_dir_usable(tmp_path, bad,
                                                                           match):
    from coalign.errors import CoalignError
    from coalign.job import Job

    split = {"split": {"train": 2, "val": 2, "test": 2}}
    fresh, kept = tmp_path / "fresh", tmp_path / "kept"
    kept.mkdir()
    for run_dir in (fresh, kept):
        with pytest.raises(CoalignError, match=match):
            Job.open(parse_run_config({**split, **bad}), run_dir)
    assert not fresh.exists()  # made for the refused config: removed again
    # the refused config was never recorded: the corrected one takes the same dir
    Job.open(parse_run_config(split), kept).store.close()


def test_policy_samples_on_replay_are_refused_where_they_feed_an_llm():
    from coalign.systems import SYSTEMS
    from coalign.tables import check_policy_samples

    check_policy_samples(SYSTEMS["next_item"]("qwen2.5-0.5b"))  # the decider feeds no LLM
    with pytest.raises(ConfigError, match=r"^run config field 'budget.policy_samples': "
                                          r"reranker's samples feed LLM components "
                                          r"\(answer_generator, info_extractor\)"):
        check_policy_samples(SYSTEMS["multihop_qa_rerank"]("qwen2.5-0.5b"))
