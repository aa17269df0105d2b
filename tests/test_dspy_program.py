"""Users' own DSPy programs (coalign.dspy): the tracer's runs, partial re-runs and forced
outputs, write-back, and optimize()'s plumbing and errors, on a deterministic fake LM (logic
only; tests/test_dspy_program_llm.py runs the real local model)."""

import json
import re

import pytest

pytest.importorskip("dspy")

import dspy  # noqa: E402

from coalign.dspy import CoalignLM, ProgramSystem, component_name, optimize  # noqa: E402
from coalign.dspy._components import write_back  # noqa: E402
from coalign.errors import ConfigError  # noqa: E402
from coalign.params import TextValue  # noqa: E402
from coalign.runtime import Runtime  # noqa: E402
from coalign.trace import Step, Trace  # noqa: E402
from tests.fakes import FakeLM  # noqa: E402

SHORT = "Reply with only the answer"
RIGHT = (SHORT, "Be concise", "exactly")  # instruction edits that make the fake answer right


def _field(text, name):
    m = re.search(rf"\[\[ ## {name} ## \]\]\n(.*?)(?:\n\n|$)", text, re.S)
    return m.group(1).strip() if m else ""


def handler(req):
    """ChatAdapter replies: a fact per question, an answer that is right once the instruction
    asks for a short or exact answer (or for even question numbers), a verdict on the answer."""
    system, last = req.messages[0].content, req.messages[-1].content
    outputs = re.findall(r"`(\w+)`", system.split("Your output fields are:")[1]
                         .split("All interactions")[0])
    q = _field(last, "question")
    word = q.split()[-1].rstrip("?") if q else ""
    values = {"fact": f"fact of {word}", "reasoning": "think",
              "answer": word if any(r in system for r in RIGHT) or int(word[1:] or 1) % 2 == 0
              else f"maybe {word}",
              "verdict": "ok " + _field(last, "answer")}
    return "\n\n".join(f"[[ ## {f} ## ]]\n{values[f]}" for f in outputs) + \
        "\n\n[[ ## completed ## ]]"


class Pipeline(dspy.Module):
    def __init__(self):
        super().__init__()
        self.extract = dspy.Predict("question -> fact")
        self.answer = dspy.ChainOfThought("question, fact -> answer")
        self.check = dspy.Predict("answer -> verdict")

    def forward(self, question):
        fact = self.extract(question=question).fact
        out = self.answer(question=question, fact=fact)
        if question.endswith("?"):  # dynamic: only questions are checked
            self.check(answer=out.answer)
        return out


def exact(example, pred, trace=None):
    return example.answer == pred.answer


def data(lo, hi):
    return [dspy.Example(question=f"what is w{i}?", answer=f"w{i}").with_inputs("question")
            for i in range(lo, hi)]


@pytest.fixture
def fake():
    return FakeLM(handler, "fake")


@pytest.fixture
def setup(fake):
    lm = CoalignLM(fake)
    system = ProgramSystem(Pipeline(), ["question"], lm)
    yield system, fake, Runtime(lms={"fake": fake}, max_workers=1)
    system.detach()


def test_components_are_the_named_predictors(setup):
    system, _, _ = setup
    assert system.order == ["extract", "answer-predict", "check"]
    answer = system.component("answer-predict")
    assert (answer.inputs, answer.outputs) == (("question", "fact"), ("reasoning", "answer"))
    assert answer.path == "answer.predict"
    assert component_name("steps[0].predict") == "steps-0-predict"


def test_trace_follows_forward_and_marks_skipped_predictors(setup):
    system, fake, rt = setup
    cfg = system.default_config()
    asked = system.run("a", {"question": "what is w2?"}, cfg, rt)
    told = system.run("b", {"question": "say w2"}, cfg, rt)
    assert [(s.component, s.skipped) for s in asked.steps] == [
        ("extract", False), ("answer-predict", False), ("check", False)]
    assert asked.step("answer-predict").inputs == {"question": "what is w2?", "fact": "fact of w2"}
    assert asked.step("check").outputs == {"verdict": "ok w2"}
    assert asked.state["prediction"] == {"reasoning": "think", "answer": "w2"}
    assert told.step("check").skipped and fake.calls == 5
    assert system.descendants("extract") == {"answer-predict", "check"}
    assert system.descendants("check") == set()


def test_run_from_reruns_the_changed_predictor_and_reuses_the_rest(setup):
    system, fake, rt = setup
    base = system.run("a", {"question": "what is w3?"}, system.default_config(), rt)
    assert base.state["prediction"]["answer"] == "maybe w3"
    cfg = system.default_config().with_value("answer-predict", "prompt", TextValue(SHORT))
    calls = fake.calls
    trace = system.run_from("answer-predict", base, cfg, rt)
    assert trace.step("extract").reused and not trace.step("answer-predict").reused
    assert trace.state["prediction"]["answer"] == "w3"
    assert trace.step("check").inputs == {"answer": "w3"}  # its input changed: it ran again
    assert fake.calls == calls + 2


def test_run_after_continues_forward_from_a_forced_output(setup):
    system, fake, rt = setup
    cfg = system.default_config()
    base = system.run("a", {"question": "what is w3?"}, cfg, rt)
    forced = Step("answer-predict", 0, base.step("answer-predict").inputs,
                  {"reasoning": "r", "answer": "forced"})
    seeded = Trace(base.example_id, cfg.digest, base.inputs,
                   [forced if s.key == forced.key else s for s in base.steps])
    calls = fake.calls
    trace = system.run_after("answer-predict", seeded, cfg, rt)
    assert trace.state["prediction"]["answer"] == "forced"
    assert trace.step("check").inputs == {"answer": "forced"}
    assert fake.calls == calls + 1  # only the check ran


def test_a_predictor_off_the_path_changes_nothing(setup):
    system, fake, rt = setup
    base = system.run("b", {"question": "say w2"}, system.default_config(), rt)
    cfg = system.default_config().with_value("check", "prompt", TextValue("Judge."))
    calls = fake.calls
    trace = system.run_from("check", base, cfg, rt)
    assert fake.calls == calls and trace.outputs_equal(base)


def test_write_back_saves_and_evaluates_as_dspy(setup, tmp_path, fake):
    system, _, _ = setup
    demo = {"question": "what is w4?", "fact": "fact of w4", "reasoning": "r", "answer": "w4"}
    values = {c.name: c.params["prompt"].default for c in system.components}
    values["answer-predict"] = TextValue(SHORT, (demo,))
    write_back(system.components, values)
    system.detach()
    program = system.program
    assert "forward" not in program.extract.__dict__
    program.save(str(tmp_path / "p.json"))
    loaded = Pipeline()
    loaded.load(str(tmp_path / "p.json"))
    assert loaded.answer.predict.signature.instructions == SHORT
    assert loaded.answer.predict.demos[0]["answer"] == "w4"
    with dspy.context(lm=CoalignLM(fake)):
        result = dspy.Evaluate(devset=data(1, 5), metric=exact, num_threads=1)(loaded)
    assert result.score == 100.0


def test_optimize_writes_the_best_values_back_and_resumes(fake, tmp_path):
    program = Pipeline()
    start = program.answer.predict.signature.instructions
    with dspy.context(lm=CoalignLM(fake)):
        result = optimize(program, data(0, 8), exact, valset=data(9, 15),
                          budget={"iterations": 3, "search_size": 3, "fresh_inputs": 2,
                                  "rollout_n": 2, "text_candidates": 2, "text_steps": 1,
                                  "text_alternatives": 4},
                          run_dir=tmp_path / "run", backbone="hashing")
    assert result.program is program
    assert result.val_before == pytest.approx(3 / 6)  # even questions only
    assert result.val_after == 1.0 and result.changed == ["answer.predict"]
    for comp in ("extract", "answer-predict", "check"):
        value = result.config[comp]["prompt"]
        pred = dict(program.named_predictors())[comp.replace("-", ".")]
        assert pred.signature.instructions == value.instruction
        assert len(pred.demos) == len(value.demos)
    assert program.answer.predict.signature.instructions != start
    assert "forward" not in program.answer.predict.__dict__  # tracers are gone
    assert len(result.history) == 3
    calls = fake.calls
    again = optimize(Pipeline(), data(0, 8), exact, valset=data(9, 15), lm=CoalignLM(fake),
                     budget={"iterations": 3, "search_size": 3, "fresh_inputs": 2,
                             "rollout_n": 2, "text_candidates": 2, "text_steps": 1,
                                  "text_alternatives": 4},
                     run_dir=tmp_path / "run", backbone="hashing")
    assert fake.calls == calls  # the ledger and stored traces: nothing runs again
    assert again.config.digest == result.config.digest
    assert [r.accepted for r in again.history] == [r.accepted for r in result.history]
    assert (again.val_before, again.val_after) == (result.val_before, result.val_after)
    with pytest.raises(ConfigError, match="holds a run of another program, data or budget"):
        optimize(Pipeline(), data(0, 8), exact, valset=data(9, 14), lm=CoalignLM(fake),
                 budget=3, run_dir=tmp_path / "run", backbone="hashing")
    saved = tmp_path / "p.json"
    program.save(str(saved))
    state = json.loads(saved.read_text())
    assert state["answer.predict"]["signature"]["instructions"] == \
        result.config["answer-predict"]["prompt"].instruction


def test_optimize_refuses_what_it_cannot_run(fake, tmp_path):
    lm = CoalignLM(fake)
    with pytest.raises(ConfigError, match=r"needs a dspy.LM \(or any dspy.BaseLM; got none\)"):
        optimize(Pipeline(), data(0, 4), exact, lm=None)
    with pytest.raises(ConfigError, match=r"trainset\[0\]: no input fields"):
        optimize(Pipeline(), [dspy.Example(question="q", answer="a")], exact, lm=lm,
                 valset=data(0, 2))
    with pytest.raises(ConfigError, match="budget field 'rollout_n'"):
        optimize(Pipeline(), data(0, 4), exact, lm=lm, budget={"rollout_n": 1})

    class Broken(dspy.Module):
        def __init__(self):
            super().__init__()
            self.answer = dspy.Predict("question -> answer")

        def forward(self, question):
            return {"answer": self.answer(question=question).answer.missing}

    with pytest.raises(ConfigError, match="raised on every validation example; the first: "
                                          "AttributeError"):
        optimize(Broken(), data(0, 4), exact, lm=lm, run_dir=tmp_path / "b", backbone="hashing")
    with pytest.raises(ConfigError, match="metric 'words' returned 'x'; it must return"):
        def words(example, pred, trace=None):
            return "x"
        optimize(Pipeline(), data(0, 4), words, lm=lm, run_dir=tmp_path / "c",
                 backbone="hashing")


def test_cli_reads_rows_and_programs_with_one_line_errors(tmp_path, monkeypatch):
    from coalign.cli._dspy import load_program, read_examples

    rows = tmp_path / "train.jsonl"
    rows.write_text('{"question": "what is w1?", "answer": "w1"}\n\n'
                    '{"question": "what is w2?", "answer": "w2"}\n')
    examples = read_examples(rows, ["question"])
    assert [e.question for e in examples] == ["what is w1?", "what is w2?"]
    assert set(examples[0].inputs().keys()) == {"question"}
    with pytest.raises(ConfigError, match=r"train.jsonl line 1: no field 'query' \(it has "
                                          r"\['answer', 'question'\]\)"):
        read_examples(rows, ["query"])
    (tmp_path / "bad.jsonl").write_text('{"question": "q"}\n[1]\n')
    with pytest.raises(ConfigError, match="bad.jsonl line 2: expected a JSON object, got list"):
        read_examples(tmp_path / "bad.jsonl", ["question"])
    (tmp_path / "user_prog.py").write_text(
        "import dspy\n\nclass Prog(dspy.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.qa = dspy.Predict('question -> answer')\n\n"
        "    def forward(self, question):\n        return self.qa(question=question)\n\n"
        "program = Prog()\nnumber = 3\n")
    monkeypatch.chdir(tmp_path)
    assert isinstance(load_program("user_prog:Prog"), dspy.Module)
    assert [n for n, _ in load_program("user_prog:program").named_predictors()] == ["qa"]
    with pytest.raises(ConfigError, match="program 'user_prog:number' is a int, not a "
                                          "dspy.Module"):
        load_program("user_prog:number")
