"""The DSPy adapter: system <-> program round trip, identical requests, cost counting, and
MIPROv2 / GEPA smoke runs on a toy system with a deterministic fake LM (logic only)."""

import importlib
import importlib.util
import math
import sys

import pytest

pytest.importorskip("dspy")

import dspy  # noqa: E402

from benchmarks import compare as compare_script  # noqa: E402
from coalign.component import FunctionComponent, LLMComponent, render_value  # noqa: E402
from coalign.data._base import Example  # noqa: E402
from coalign.errors import ConfigError  # noqa: E402
from coalign.optimize._dspy import (  # noqa: E402
    BudgetExhausted,
    CoalignDSPyLM,
    CoalignEngine,
    DSPyMeter,
    from_dspy_program,
    to_dspy_program,
)
from coalign.optimize._dspy_optimize import dspy_optimize, plan_gepa, plan_mipro  # noqa: E402
from coalign.params import Choice, TextValue  # noqa: E402
from coalign.runner import evaluate  # noqa: E402
from coalign.runtime import Runtime  # noqa: E402
from coalign.system import Loop, System  # noqa: E402
from coalign.task import Task  # noqa: E402
from tests.fakes import FakeLM  # noqa: E402

SHORT = "short answer only"


def handler(req):
    """Proposer/reflection prompts (DSPy's ChatAdapter) get a better instruction, as plain text;
    the answer step is right for even questions, or for all once told to be short."""
    first, last = req.messages[0].content, req.messages[-1].content
    if "Your input fields are" in first:
        return f"Reply with the {SHORT}."
    word = last.split("Question: ")[1].split("\n")[0].split()[-1]
    if "Passages:" in last:
        return f"fact: {word} is a word"
    right = SHORT in first or int(word[1:]) % 2 == 0
    return word if right else f"maybe {word}"


def toy_task(**retrieve_kw):
    def fetch(x, c, ctx):
        return {"passages": [{"title": "T", "text": x["question"]}] * c["k"]}

    retrieve = FunctionComponent("retrieve", fetch, ["question"], ["passages"],
                                 params={"k": Choice([1, 2], 2)}, **retrieve_kw)
    extract = LLMComponent("extract", ["question", "passages"], "info", "Write the fact.",
                           model="fake")
    answer = LLMComponent("answer", ["question", "info"], "answer", "Answer the question.",
                          model="fake")
    system = System("toy", [retrieve, extract, answer], ["question"], "answer")
    return Task(system, lambda p, e: float(p == e.target), "em")


def examples(lo, hi):
    return [Example(f"e{i}", {"question": f"what is w{i}"}, f"w{i}") for i in range(lo, hi)]


@pytest.fixture
def setup():
    lm = FakeLM(handler, "fake")
    return toy_task(), lm, Runtime(lms={"fake": lm}, max_workers=1)


def demo_config(system):
    demo = {"question": "what is w9", "passages": "[1] T: what is w9", "info": "fact: w9"}
    return system.default_config().with_value("extract", "prompt",
                                              TextValue("Write the fact.", (demo,)))


def test_round_trip_preserves_instructions_and_demos(setup):
    task, _, rt = setup
    config = demo_config(task.system).with_value("retrieve", "k", 1)
    program = to_dspy_program(task.system, config, rt)
    assert [n for n, _ in program.named_predictors()] == ["extract", "answer"]
    assert program.extract.signature.instructions == "Write the fact."
    back = from_dspy_program(program, task.system, config)
    assert back.to_json() == config.to_json() and back.digest == config.digest
    assert from_dspy_program(program.deepcopy(), task.system, config).digest == config.digest


def test_forward_sends_the_requests_system_run_sends(setup):
    task, lm, rt = setup
    seen = []
    lm._handler = lambda req: seen.append(req) or handler(req)
    config = demo_config(task.system)
    program = to_dspy_program(task.system, config, rt)
    with dspy.context(lm=CoalignDSPyLM(CoalignEngine(rt, "fake"))):
        preds = [program(**e.inputs) for e in examples(0, 3)]
    via_dspy, seen[:] = list(seen), []
    traces = [task.system.run(e.id, e.inputs, config, rt) for e in examples(0, 3)]
    assert via_dspy == seen and len(seen) == 6  # identical requests: identical cache keys
    for pred, trace in zip(preds, traces, strict=True):
        assert {k: pred[k] for k in ("passages", "info", "answer")} == \
            {k: trace.state[k] for k in ("passages", "info", "answer")}


def test_lm_counts_calls_and_maps_rollouts_to_samples(setup):
    task, lm, rt = setup
    seen = []
    lm._handler = lambda req: seen.append(req) or "hello there"
    meter = DSPyMeter(["extract", "answer"])
    dlm = CoalignDSPyLM(CoalignEngine(rt, "fake", meter), max_tokens=7)
    assert dlm("hi") == ["hello there"]
    assert dlm.copy(rollout_id=3, temperature=1.0)("hi") == ["hello there"]
    assert (seen[0].sample_index, seen[0].temperature, seen[0].max_tokens) == (0, 0.0, 7)
    assert (seen[1].sample_index, seen[1].temperature) == (3, 1.0)
    assert meter.calls == 2 and meter.runs == pytest.approx(1.0)  # outside a program: 1/K each
    program = to_dspy_program(task.system, task.system.default_config(), rt, meter)
    with dspy.context(lm=dlm):
        program(question="what is w2")
    assert meter.account.executed["dspy"] == {"extract": 1, "answer": 1}
    assert meter.runs == pytest.approx(2.0) and meter.account.total_usage().calls == 4


def test_editing_one_predictor_changes_exactly_that_param(setup):
    task, _, rt = setup
    config = demo_config(task.system)
    program = to_dspy_program(task.system, config, rt)
    program.answer.signature = program.answer.signature.with_instructions("Be brief.")
    new = from_dspy_program(program, task.system, config)
    assert new["answer"]["prompt"] == TextValue("Be brief.")
    for comp in ("retrieve", "extract"):
        assert new.component_digest(comp) == config.component_digest(comp)


def test_bootstrapped_demos_are_rendered_complete_and_capped(setup):
    task, _, rt = setup
    program = to_dspy_program(task.system, task.system.default_config(), rt)
    passages = [{"title": "T", "text": "x" * 900}]
    full = [dspy.Example(augmented=True, question=f"q{i}", passages=passages, info=f"i{i}")
            for i in range(6)]
    program.extract.demos = [dspy.Example(augmented=True, question="q", passages=passages)] + full
    demos = from_dspy_program(program, task.system)["extract"]["prompt"].demos
    assert len(demos) == 4  # Text's max_demos; the demo without an output is dropped
    assert demos[0] == {"question": "q0", "passages": render_value(passages, 400), "info": "i0"}


def test_loops_and_conditional_components_are_refused(setup):
    task, _, rt = setup
    with pytest.raises(ConfigError, match="straight DAGs"):
        to_dspy_program(toy_task(when=lambda f: True).system)
    looped = System("loop", task.system.components, ["question"], "answer",
                    loops=[Loop("answer", "extract", lambda f: False)])
    with pytest.raises(ConfigError, match="loop back"):
        to_dspy_program(looped)


def test_budget_guard_refuses_a_run_the_budget_does_not_cover(setup):
    task, _, rt = setup
    meter = DSPyMeter(["extract", "answer"], budget_runs=1.5)
    program = to_dspy_program(task.system, None, rt, meter)
    with dspy.context(lm=CoalignDSPyLM(CoalignEngine(rt, "fake", meter))):
        program(question="what is w1")
        with pytest.raises(BudgetExhausted, match="1.5 equivalent runs"):
            program(question="what is w2")
    assert meter.runs == pytest.approx(1.0)


def test_plans_fit_the_budget_or_say_what_they_need():
    plan = plan_mipro(60, n_train=6, n_val=6, max_demos=4)
    assert plan["planned_runs"] <= 60 and plan["num_trials"] >= 1.5 * plan["num_candidates"]
    big = plan_mipro(400, n_train=24, n_val=60, max_demos=4)
    assert big["minibatch"] and big["planned_runs"] <= 400 and big["num_candidates"] == 3
    with pytest.raises(ConfigError, match="needs at least 20 equivalent runs"):
        plan_mipro(10, n_train=6, n_val=6, max_demos=4)
    assert plan_gepa(30, n_train=6, n_val=6)["iteration_runs"] == 13
    with pytest.raises(ConfigError, match="needs at least 19"):
        plan_gepa(18, n_train=6, n_val=6)


@pytest.mark.parametrize("method", ["mipro", "gepa"])
def test_dspy_optimize_within_budget_scores_like_coalign(setup, method):
    task, lm, rt = setup
    train, val = examples(0, 6), examples(6, 12)
    res = dspy_optimize(task, train, val, rt, 60, method=method, seed=0)
    assert res.method == method and 0 < res.equiv_runs <= 60 and res.overrun == 0
    assert res.account.total_usage().calls == lm.calls  # every call the fake served is counted
    assert res.best_score == 1.0 and res.best["answer"]["prompt"].instruction.endswith(
        f"{SHORT}.")
    # DSPy's validation score of its pick is what coalign's runner measures on the converted config
    assert evaluate(task, val, res.best, rt).mean_reward == pytest.approx(res.best_score)
    assert res.best.digest in {d for d, _ in res.tried}


def test_compare_dspy_rows_have_the_common_keys(setup, tmp_path):
    from coalign.store import RunStore

    task, _, rt = setup
    compare = compare_script
    assert compare.HAS_DSPY
    test = examples(12, 16)
    base = evaluate(task, test, task.system.default_config(), rt)
    splits = (examples(0, 6), examples(6, 12), test)
    store = RunStore(tmp_path / "run")
    rows = {f"dspy_{m}": compare.dspy_row(m, task, splits, rt, store, 60, 0)
            for m in ("mipro", "gepa")}
    for row in rows.values():
        assert {"test_metric", "equiv_runs", "llm_calls", "scores", "budget_runs"} <= set(row)
        assert row["test_metric"] == 1.0
    out = compare.with_differences({"unoptimized": {"scores": base.scores},
                                    "coalign": {"scores": [1.0] * len(test)}, **rows}, seed=0)
    assert out["dspy_gepa"]["diff_vs_unoptimized"]["mean"] == 0.5
    assert out["coalign"]["diff_vs"]["dspy_mipro"]["mean"] == 0.0
    small = RunStore(tmp_path / "small")
    skipped = {m: compare.dspy_row(m, task, splits, rt, small, 12, 0) for m in ("mipro", "gepa")}
    assert math.isnan(skipped["mipro"]["test_metric"]) and "too small" in \
        skipped["gepa"]["skipped"]


def test_missing_dspy_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dspy", None)
    monkeypatch.delitem(sys.modules, "coalign.optimize._dspy")
    with pytest.raises(ImportError, match=r"pip install 'coalign\[bench\]'"):
        importlib.import_module("coalign.optimize._dspy")


@pytest.mark.llm
def test_adapter_on_the_local_smollm2():
    from coalign.lm import make_lm

    rt = Runtime(lms={"smollm2-135m": make_lm("llamacpp:smollm2-135m")}, max_workers=1)
    comps = [LLMComponent("fact", ["question"], "info", "State one fact that helps answer.",
                          model="smollm2-135m", max_tokens=24),
             LLMComponent("answer", ["question", "info"], "answer", "Reply with only the answer.",
                          model="smollm2-135m", max_tokens=8)]
    system = System("qa", comps, ["question"], "answer")
    meter = DSPyMeter(["fact", "answer"])
    program = to_dspy_program(system, None, rt, meter)
    questions = ["What is the capital of France?", "Which planet is called the red planet?"]
    with dspy.context(lm=CoalignDSPyLM(CoalignEngine(rt, "smollm2-135m", meter))):
        preds = [program(question=q) for q in questions]
    for q, pred in zip(questions, preds, strict=True):
        state = system.run(q, {"question": q}, system.default_config(), rt).state
        assert (pred.info, pred.answer) == (state["info"], state["answer"])
    assert meter.calls == 4 and meter.runs == pytest.approx(2.0)


def test_a_component_s_own_routing_is_followed_as_system_run_follows_it():
    """code_gen's reviser answers a passing problem itself and may hide the code: the program
    makes exactly the requests system.run makes (it once called the reviser every time)."""
    from coalign.systems._code import code_gen

    task = code_gen("fake")
    replies = {"Write a Python": "```python\ndef f(x):\n    return x * 2\n```",
               "Write three": "assert f(1) == 2"}

    def reply(req):
        first = req.messages[0].content
        return next((r for k, r in replies.items() if first.startswith(k)), "```python\n```")

    seen = []
    lm = FakeLM(lambda req: seen.append(req) or reply(req), "fake")
    rt = Runtime(lms={"fake": lm}, max_workers=1)
    cases = [{"task": "double x", "example_test": "assert f(3) == 6"},  # passes: no revision
             {"task": "triple x", "example_test": "assert f(3) == 9"}]  # fails: revised
    config = task.system.default_config().with_value("reviser", "sees_code", False)
    program = to_dspy_program(task.system, config, rt)
    with dspy.context(lm=CoalignDSPyLM(CoalignEngine(rt, "fake"))):
        preds = [program(**x) for x in cases]
    via_dspy, seen[:] = list(seen), []
    traces = [task.system.run(f"c{i}", x, config, rt) for i, x in enumerate(cases)]
    assert via_dspy == seen and len(seen) == 5  # 2 + 2 calls, and one revision
    assert "def f" not in seen[-1].messages[-1].content  # sees_code off: the code is hidden
    assert [p["final_code"] for p in preds] == [t.state["final_code"] for t in traces]


def test_a_component_overriding_forward_is_refused():
    class Custom(LLMComponent):
        def forward(self, inputs, config, ctx):
            return super().forward(inputs, config, ctx)

    system = System("c", [Custom("a", ["question"], "answer", "Answer.", model="fake")],
                    ["question"], "answer")
    with pytest.raises(ConfigError, match=r"\['a'\] override forward.*route instead"):
        to_dspy_program(system)
