"""Users' own DSPy programs optimized by coalign on the real local model (marked ``llm``):
a two-predictor program, and a multi-hop program with a ChainOfThought step and BM25 retrieval
in Python between its predictors. Sizes are the smallest that run every phase of the loop."""

from __future__ import annotations

import pytest

pytest.importorskip("dspy")
pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed")

import dspy  # noqa: E402

from coalign.data import f1_score, load_hotpotqa  # noqa: E402
from coalign.dspy import CoalignLM, ProgramSystem, optimize  # noqa: E402
from coalign.retrieval import BM25Index  # noqa: E402
from coalign.rollouts import RolloutSpec, collect_pairs  # noqa: E402
from coalign.runtime import Runtime  # noqa: E402
from coalign.task import Task  # noqa: E402

pytestmark = pytest.mark.llm
MODEL = "qwen2.5-0.5b"  # SmolLM2-135M rarely keeps DSPy's [[ ## field ## ]] markers
BUDGET = {"iterations": 1, "search_size": 1, "fresh_inputs": 1, "rollout_n": 0,
          "text_alternatives": 1, "text_candidates": 1, "text_steps": 1}


def retrieve(query: str, paragraphs: list[dict], k: int = 2) -> list[str]:
    texts = [f"{p['title']}: {p['text']}"[:300] for p in paragraphs]
    return [texts[i] for i in BM25Index(texts).search(query, k)]


class TwoStep(dspy.Module):
    def __init__(self) -> None:
        super().__init__()
        self.extract = dspy.Predict("question, passages -> fact")
        self.answer = dspy.Predict("question, fact -> answer")

    def forward(self, question: str, paragraphs: list[dict]) -> dspy.Prediction:
        fact = self.extract(question=question, passages=retrieve(question, paragraphs)).fact
        return self.answer(question=question, fact=fact)


class MultiHop(dspy.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hop1 = dspy.ChainOfThought("question -> search_query", max_tokens=160)
        self.hop2 = dspy.Predict("question, passages -> search_query")
        self.answer = dspy.Predict("question, passages -> answer")

    def forward(self, question: str, paragraphs: list[dict]) -> dspy.Prediction:
        first = retrieve(self.hop1(question=question).search_query, paragraphs, k=1)
        query = self.hop2(question=question, passages=first).search_query
        return self.answer(question=question, passages=first + retrieve(query, paragraphs, k=1))


def f1(example: dspy.Example, pred: dspy.Prediction, trace: object = None) -> float:
    return f1_score(str(pred.answer or ""), example.answer)


def hotpot(n: int, offset: int) -> list[dspy.Example]:
    rows = load_hotpotqa(limit=offset + n)[offset:]
    return [dspy.Example(question=e.inputs["question"], paragraphs=e.inputs["paragraphs"],
                         answer=e.target).with_inputs("question", "paragraphs") for e in rows]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("dspy_llm") / "lm_cache.sqlite"  # shared: repeats are free


@pytest.fixture
def lm(cache):
    lm = CoalignLM(MODEL, cache=cache, max_tokens=48)
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        yield lm


def check_written_back(program: dspy.Module, result, tmp_path) -> None:
    for name, pred in program.named_predictors():
        value = result.config[name.replace(".", "-")]["prompt"]
        assert pred.signature.instructions == value.instruction
        assert [dict(d) for d in pred.demos] == [dict(d) for d in value.demos]
        assert "forward" not in pred.__dict__  # the tracer is gone
    program.save(str(tmp_path / "program.json"))
    loaded = type(program)()
    loaded.load(str(tmp_path / "program.json"))
    assert [p.signature.instructions for _, p in loaded.named_predictors()] == \
        [p.signature.instructions for _, p in program.named_predictors()]
    score = dspy.Evaluate(devset=hotpot(1, 202), metric=f1, num_threads=1,
                          max_errors=2)(loaded).score
    assert 0.0 <= score <= 100.0


def test_two_predictor_program_is_optimized_and_written_back(lm, tmp_path):
    program = TwoStep()
    result = optimize(program, hotpot(1, 200), f1, valset=hotpot(1, 202), budget=BUDGET,
                      run_dir=tmp_path / "run")
    assert 0.0 <= result.val_before <= result.val_after <= 1.0  # the gate only accepts gains
    assert len(result.history) == 1
    assert result.ledger.llm_calls["lrf_train"] > 0
    check_written_back(program, result, tmp_path)


def test_multihop_rollouts_force_one_predictor_and_replay_the_rest(lm, tmp_path):
    program = MultiHop()
    with ProgramSystem(program, ["question", "paragraphs"], lm) as system:
        task = Task(system, lambda pred, e: f1_score(str((pred or {}).get("answer", "")),
                                                     e.target))
        runtime = Runtime(lms={MODEL: lm.backend}, max_workers=1)
        examples = load_hotpotqa(limit=1)
        base = system.run(examples[0].id, examples[0].inputs, system.default_config(), runtime)
        assert [s.component for s in base.steps] == ["hop1-predict", "hop2", "answer"]
        query = base.step("hop1-predict").outputs["search_query"]
        assert base.step("hop1-predict").outputs["reasoning"]  # ChainOfThought's field
        # the data flow is the traced one: hop2 read what retrieval made of hop1's query
        assert base.step("hop2").inputs["passages"] == \
            retrieve(query, examples[0].inputs["paragraphs"], k=1)
        col = collect_pairs(task, "hop2", examples, system.default_config(), runtime,
                            RolloutSpec(n=2, temperature=1.0), base_traces={base.example_id: base})
        for trace in col.traces:
            assert trace.step("hop1-predict").reused  # upstream: answered from the trace
            forced = trace.step("hop2").outputs["search_query"]
            if forced is not None:  # the answer step read what forward made of the candidate
                assert trace.step("answer").inputs["passages"][1:] == \
                    retrieve(forced, examples[0].inputs["paragraphs"], k=1)
        assert len(col.traces) == 2  # one downstream completion per candidate


def test_multihop_program_is_optimized_and_written_back(lm, tmp_path):
    program = MultiHop()
    result = optimize(program, hotpot(1, 200), f1, valset=hotpot(1, 202), budget=BUDGET,
                      run_dir=tmp_path / "run")
    assert 0.0 <= result.val_before <= result.val_after <= 1.0
    assert len(result.history) == 1 and result.ledger.llm_calls["lrf_train"] > 0
    check_written_back(program, result, tmp_path)


USER_MODULE = '''
import dspy

from coalign.data import f1_score


class Answer(dspy.Module):
    def __init__(self):
        super().__init__()
        self.answer = dspy.Predict("question, context -> answer")

    def forward(self, question, context):
        return self.answer(question=question, context=context)


def f1(example, pred, trace=None):
    return f1_score(str(pred.answer or ""), example.answer)
'''


def test_cli_optimizes_a_program_from_a_user_module(tmp_path):
    import json
    import subprocess
    import sys

    (tmp_path / "user_qa.py").write_text(USER_MODULE)
    for name, offset in (("train", 200), ("val", 202)):  # one question each
        rows = [{"question": e.inputs["question"], "answer": e.target,
                 "context": " ".join(retrieve(e.inputs["question"], e.inputs["paragraphs"]))}
                for e in load_hotpotqa(limit=offset + 1)[offset:]]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    budget = json.dumps({k: v for k, v in BUDGET.items() if k != "iterations"})
    proc = subprocess.run(
        [sys.executable, "-m", "coalign", "optimize-dspy", "user_qa:Answer", "--train",
         "train.jsonl", "--val", "val.jsonl", "--inputs", "question,context", "--metric",
         "user_qa:f1", "--model", MODEL, "--iterations", "1", "--budget", budget,
         "--max-tokens", "32", "--run-dir", "run", "--save", "qa.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    assert "step 0: answer" in out and "saved qa.json" in out
    saved = json.loads((tmp_path / "qa.json").read_text())
    assert set(saved) >= {"answer", "metadata"}
    assert saved["answer"]["signature"]["instructions"]
