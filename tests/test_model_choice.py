"""Model choice per LLM component (``models=``) and the per-query cost it carries."""

import pytest

from coalign.component import LLMComponent
from coalign.errors import ConfigError
from coalign.params import Choice
from coalign.runtime import Runtime
from coalign.system import System
from coalign.systems import code_gen, models_of, multihop_qa
from coalign.systems._model_choice import model_param
from coalign.trace import Usage
from tests.fakes import FakeLM

MODELS = ("qwen2.5-0.5b", "qwen2.5-1.5b")


def test_model_param_is_the_name_without_models_else_a_choice_starting_at_it():
    assert model_param("qwen2.5-0.5b") == "qwen2.5-0.5b"
    choice = model_param("qwen2.5-1.5b", MODELS, "per_instance")
    assert isinstance(choice, Choice)
    assert choice.options == MODELS and choice.default == "qwen2.5-1.5b"
    assert choice.scope == "per_instance"
    with pytest.raises(ConfigError, match="starting model 'smollm2-135m' must be one of"):
        model_param("smollm2-135m", MODELS)
    with pytest.raises(ConfigError, match="distinct model names"):
        model_param("a", ["a", "a"])
    with pytest.raises(ConfigError, match="model_scope: must be one of"):
        model_param("a", ["a", "b"], "sometimes")


@pytest.mark.parametrize("factory, llm", [
    (code_gen, ("code_generator", "test_generator", "reviser")),
    (multihop_qa, ("question_rewriter", "info_extractor", "answer_generator")),
])
def test_every_llm_component_of_a_shipped_system_gets_its_own_model_choice(factory, llm):
    task = factory("qwen2.5-0.5b", models=MODELS)
    params = [task.system.component(name).params["model"] for name in llm]
    assert all(p.options == MODELS and p.default == "qwen2.5-0.5b" for p in params)
    assert len({id(p) for p in params}) == len(params)  # one param object each
    assert models_of(task) == sorted(MODELS)
    plain = factory("qwen2.5-0.5b")
    assert all("model" not in plain.system.component(name).params for name in llm)


def test_next_item_gets_model_choices_too():
    pytest.importorskip("torch")
    from coalign.systems import next_item

    task = next_item("qwen2.5-0.5b", models=MODELS)
    for name in ("session_analyzer", "candidate_profiler"):
        assert task.system.component(name).params["model"].options == MODELS


def test_the_chosen_model_answers_and_the_trace_costs_its_seconds():
    lms = {"small": FakeLM(lambda r: "s", "small", latency_s=1.0),
           "big": FakeLM(lambda r: "b", "big", latency_s=3.0)}
    comps = [LLMComponent(n, [i], o, "do it", model=model_param("small", ["small", "big"]))
             for n, i, o in (("first", "x", "y"), ("second", "y", "z"))]
    system = System("two", comps, inputs=["x"], output="z")
    runtime = Runtime(lms=lms, max_workers=1)
    config = system.default_config().with_value("second", "model", "big")
    trace = system.run("q1", {"x": "hello"}, config, runtime)
    assert trace.state["y"] == "s" and trace.state["z"] == "b"
    assert lms["small"].calls == 1 and lms["big"].calls == 1
    assert trace.cost_s() == pytest.approx(4.0)
    assert trace.step("second").usage.model_s == pytest.approx(3.0)


def test_usage_model_seconds_round_trip_and_old_records_read_as_zero():
    usage = Usage(calls=2, prompt_tokens=10, completion_tokens=3, model_s=1.25)
    assert Usage.from_json(usage.to_json()) == usage
    assert Usage.from_json({"calls": 1}).model_s == 0.0


def test_a_run_config_names_the_models_and_a_system_without_model_choice_refuses_them():
    from coalign.imports import load_task
    from coalign.job import parse_run_config

    cfg = parse_run_config({"system": "code_gen", "data": "mbpp", "models": list(MODELS)})
    task = load_task(cfg.system, cfg.model, cfg.metric, cfg.models)
    assert task.system.component("reviser").params["model"].options == MODELS
    with pytest.raises(ConfigError, match="field 'models': system 'pubmedqa_select' has no "
                                          "model choice"):
        load_task("pubmedqa_select", "qwen2.5-0.5b", None, list(MODELS))
    with pytest.raises(ConfigError, match="field 'models'"):
        parse_run_config({"system": "code_gen", "models": ["qwen2.5-0.5b"]})


def test_a_bundled_model_call_costs_its_tokens_at_the_measured_speed():
    from coalign.lm import model_seconds
    from coalign.lm._models import find_bundled

    prefill, decode = find_bundled("qwen2.5-1.5b").speed
    assert model_seconds("qwen2.5-1.5b", 260, 80, latency_s=99.0) == pytest.approx(
        260 / prefill + 80 / decode)
    assert model_seconds("llamacpp:qwen2.5-1.5b", 260, 80, 99.0) == model_seconds(
        "qwen2.5-1.5b", 260, 80, 0.0)
    # the 1.5B costs about twice the 0.5B per call; an endpoint costs its latency
    ratio = model_seconds("qwen2.5-1.5b", 260, 80, 0) / model_seconds("qwen2.5-0.5b", 260, 80, 0)
    assert 1.7 < ratio < 2.5
    assert model_seconds("openai:gpt-4o-mini@http://x/v1", 260, 80, 1.25) == 1.25


@pytest.mark.llm
@pytest.mark.slow
def test_coalign_evaluate_code_gen_on_mbpp_with_the_bundled_1_5b(tmp_path):
    """The issue's command, through the real CLI: the 1.5B assembled from its chunk packages,
    verified, loaded and run on an MBPP problem in the sandbox."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    coalign = str(Path(sys.executable).parent / "coalign")
    proc = subprocess.run([coalign, "evaluate", "code_gen", "--data", "mbpp", "--model",
                           "qwen2.5-1.5b", "--limit", "1", "--run-dir", str(tmp_path / "ev"),
                           "--json", str(tmp_path / "out.json")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "out.json").read_text())
    assert summary["examples"] == 1 and summary["llm_calls"] >= 2
    assert summary["cost_per_query_s"] > 0
