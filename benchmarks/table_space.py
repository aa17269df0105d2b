"""Write the candidate space of a replay table (``space.json``), chosen without the pool.

Candidates for each Text param come from the same three sources the loop's text optimizer
draws from: an edit operator, the proposer LM (the optimizer's meta prompt, on an input from
outside the pool) and demonstrations bootstrapped from runs of the starting system on questions
outside the pool (kept where the final answer scored 1, as DSPy's bootstrap does), plus
hand-written candidates aimed at failures a probe showed. ``multihop_qa``: the pool is the first
``--pool`` HotpotQA questions and the bootstrap questions come from the file's end.
``code_gen``: the pool is the first ``--pool`` sanitized MBPP test problems and the bootstrap
problems come from MBPP's validation split. ``next_item``: the pool is the validation and test
sessions, candidates come from train sessions. No pool question (and so no test question of any
split drawn from it) shapes the candidates.

    python -m benchmarks.table_space multihop_qa --out benchmarks/tables/multihop_qa
    python -m benchmarks.table_space code_gen --out benchmarks/tables/code_gen --pool 100
    python -m benchmarks.table_space next_item --out benchmarks/tables/next_item --pool 159
    python -m benchmarks.table_space multihop_qa_wide --out benchmarks/tables/multihop_qa_wide
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from coalign.backends import build_runtime
from coalign.component import first_line, render_fields, render_value
from coalign.lm import chat
from coalign.optimize import EDITS, META, clean_proposal
from coalign.runner import load_dataset
from coalign.systems import multihop_qa
from coalign.tables import CandidateSpace, Samples

# Edit operators picked per component for what a 0.5B model gets wrong there (see docs).
EDIT_FOR = {
    "question_rewriter": (6,),  # keep every name exactly as written
    "info_extractor": (7, 5),  # several parts: a fact for each; never guess
    "answer_generator": (2,),  # copy names and numbers exactly
}
FALLBACK_EDIT = 8  # several parts: the fact about each named one
LAYOUT = "inputs_first"  # calls differing only in their instruction share the input prefix
LABELLED = 4  # labelled demos of the wide HotpotQA space's answer candidate
SECOND_REWRITE = ("Write the names of the people, places, works and things the question "
                  "mentions, separated by commas. Reply with only the names.")


def propose(lm, description: str, example: str, output: str, current: str,
            tries: int = 12, max_shared: int = 3) -> tuple[str | None, int]:
    """The proposer LM's first clean instruction (the text optimizer's meta prompt)."""
    tried = f"- {current} (score 0.300)"
    prompt = META.format(description=description, example=example, output=output, tried=tried)
    for i in range(tries):
        text = first_line(lm.generate(chat(prompt, max_tokens=80, temperature=0.9,
                                           sample_index=i)).text,
                          ("instruction:", "new instruction:"))
        clean = clean_proposal(text, example, current, max_shared=max_shared)
        if clean:
            return clean, i
    return None, tries


def bootstrap(task, examples, runtime, want: int) -> list[Any]:
    """Traces of the starting system that answered perfectly (F1 = 1), up to ``want``."""
    config = task.system.default_config()
    good = []
    for e in examples:
        trace = task.score(task.system.run(e.id, e.inputs, config, runtime), e)
        if trace.reward == 1.0:
            good.append(trace)
            if len(good) == want:
                break
    return good


def model_and_bootstrap(task, outside, cache: Path, want: int):
    """The model (cached responses) and up to ``want`` perfect runs on the ``outside`` set."""
    runtime, _ = build_runtime(["qwen2.5-0.5b"], cache, max_workers=1)
    traces = bootstrap(task, outside, runtime, want=want)
    if len(traces) < 2:
        raise SystemExit(f"only {len(traces)} perfect bootstrap runs; widen the outside set")
    return runtime.lm("qwen2.5-0.5b"), traces


def demo(step, max_chars: int = 400) -> dict[str, str]:
    shown = {k: render_value(v, max_chars) for k, v in step.inputs.items()}
    return {**shown, **{k: str(v) for k, v in step.outputs.items()}}


def multihop_space(pool: int, cache: Path) -> CandidateSpace:
    examples = load_dataset("hotpotqa")
    outside = examples[-48:]  # never in the pool: the pool is the file's first questions
    assert pool + len(outside) <= len(examples), "pool overlaps the bootstrap questions"
    task = multihop_qa("qwen2.5-0.5b", ks=(3, 5), query_sources=("query", "question"),
                       layout=LAYOUT)
    lm, traces = model_and_bootstrap(task, outside, cache, want=3)
    notes: dict[str, Any] = {"pool": f"first {pool} of hotpotqa_dev_unified.jsonl",
                             "bootstrap_questions": [t.example_id for t in traces]}
    params: dict[str, list[Any]] = {}
    probe = traces[0]
    for name in ("question_rewriter", "info_extractor", "answer_generator"):
        comp = task.system.component(name)
        start = comp.params["prompt"].default
        step = probe.step(name)
        values = [start.to_json()]
        how = ["start"]
        for i in EDIT_FOR[name]:
            values.append({"instruction": EDITS[i](start.instruction), "demos": []})
            how.append(f"edit operator {i}")
        if name == "question_rewriter":
            # a 0.5B proposer writes query instructions for the example, not for the step
            values.append({"instruction": SECOND_REWRITE, "demos": []})
            how.append("hand-written: entity list")
        else:
            proposed, tries = propose(lm, comp.description, render_fields(step.inputs, 600),
                                      render_value(step.outputs, 200), start.instruction)
            if proposed:
                values.append({"instruction": proposed, "demos": []})
                how.append(f"proposer LM (sample {tries})")
            else:  # every draw copied the example or the meta prompt: one more edit instead
                values.append({"instruction": EDITS[FALLBACK_EDIT](start.instruction),
                               "demos": []})
                how.append(f"edit operator {FALLBACK_EDIT} (no clean proposal in {tries} "
                           "proposer draws)")
        if name == "answer_generator":
            # demos come before the inputs, so they share no prompt prefix with the other
            # candidates: on the extractor (long passages) one demo set would cost as much as
            # the other three candidates together; on the short answer prompt it is cheap
            demos = [demo(t.step(name)) for t in traces[:2]]
            values.append({"instruction": start.instruction, "demos": demos})
            how.append("bootstrapped demos (2, from F1 = 1 runs outside the pool)")
        params[f"{name}.prompt"] = values
        notes[f"{name}.prompt"] = how
    params["retriever.k"] = [3, 5]
    params["retriever.query"] = ["query", "question"]
    notes["retriever.query"] = ["the rewriter's query", "the question as asked"]
    return CandidateSpace(system="multihop_qa", dataset="hotpotqa",
                          questions=tuple(e.id for e in examples[:pool]),
                          params={k: tuple(v) for k, v in params.items()},
                          options={"ks": [3, 5], "query_sources": ["query", "question"],
                                   "layout": LAYOUT},
                          samples=Samples(2, 1.0), notes=notes)


def labelled_demos(task, examples, runtime) -> list[dict[str, str]]:
    """Answer-step demos: each question with the starting extractor's facts and its gold
    answer (DSPy's LabeledFewShot over the starting system)."""
    config = task.system.default_config()
    return [{"question": e.inputs["question"],
             "info": task.system.run(e.id, e.inputs, config, runtime)
             .step("info_extractor").outputs["info"],
             "answer": str(e.target)} for e in examples]


def multihop_wide_space(pool: int, cache: Path,
                        base: Path = Path("benchmarks/tables/multihop_qa")) -> CandidateSpace:
    """The HotpotQA space plus labelled demos for the answer step (DSPy's LabeledFewShot).

    The base space's candidates are kept verbatim (regenerating them now would not reproduce
    its sampled proposals). The new candidate shows the first ``LABELLED`` questions of the
    bootstrap set (the file's end, outside the pool) with the starting extractor's facts and
    the gold answer: a probe on 40 other outside questions (docs/tables.md) found short gold
    answers the strongest lever on the 0.5B answer step's sentence-long replies.
    """
    old = CandidateSpace.load(base)
    if len(old.questions) != pool:
        raise SystemExit(f"--pool {pool}: the base space {base} has {len(old.questions)}")
    examples = load_dataset("hotpotqa")
    task = old.task(finite=False)
    runtime, _ = build_runtime(["qwen2.5-0.5b"], cache, max_workers=1)
    demos = labelled_demos(task, examples[-48:][:LABELLED], runtime)
    start = task.system.component("answer_generator").params["prompt"].default
    params = dict(old.params)
    key = "answer_generator.prompt"
    params[key] = (*old.params[key], {"instruction": start.instruction, "demos": demos})
    notes = {**old.notes, "base_space": old.digest,
             key: [*old.notes[key], f"labelled demos ({LABELLED} bootstrap-set questions: the "
                                    "starting extractor's facts, the gold answer)"]}
    return CandidateSpace(system=old.system, dataset=old.dataset, questions=old.questions,
                          params=params, options=old.options, samples=Samples(0, 1.0),
                          notes=notes)


# Hand-written candidates for the code system, each aimed at a failure the probe showed: the
# model names the function differently from the tests, or writes asserts with wrong expected
# values, or rewrites working parts when fixing one.
CODE_NAME = " Use exactly the function name and argument order that the example test uses."
TESTS_SMALL = ("Write three assert statements for the function in the example test. Use small "
               "inputs whose results you can work out exactly. Reply with only the asserts, "
               "one per line.")
REVISE_MINIMAL = ("Fix the code so that the failing tests pass, changing as little as possible "
                  "and keeping the function name. Reply with only the code in one ```python "
                  "block.")


def code_space(pool: int, cache: Path) -> CandidateSpace:
    from coalign.data import load_mbpp
    from coalign.systems import code_gen

    examples = load_mbpp(split="test")[:pool]
    outside = load_mbpp(split="validation")  # bootstrap and proposer inputs: never the pool
    task = code_gen("qwen2.5-0.5b", layout=LAYOUT)
    lm, traces = model_and_bootstrap(task, outside, cache, want=2)
    notes: dict[str, Any] = {"pool": f"first {pool} of the sanitized MBPP test split",
                             "bootstrap_questions": [t.example_id for t in traces]}
    gen = task.system.component("code_generator")
    start = gen.params["prompt"].default
    step = traces[0].step("code_generator")
    # a task is a few words: one shared with the example already makes a task-specific
    # instruction ("Write a function that filters out odd numbers from a list.")
    proposed, tries = propose(lm, gen.description, render_fields(step.inputs, 600),
                              render_value(step.outputs, 300), start.instruction, max_shared=0)
    values = [start.to_json(), {"instruction": start.instruction + CODE_NAME, "demos": []}]
    how = ["start", "hand-written: the example test's name and arguments"]
    if proposed:
        values.append({"instruction": proposed, "demos": []})
        how.append(f"proposer LM (sample {tries})")
    else:
        values.append({"instruction": EDITS[4](start.instruction), "demos": []})
        how.append(f"edit operator 4 (no clean proposal in {tries} proposer draws)")
    values.append({"instruction": start.instruction,
                   "demos": [demo(t.step("code_generator"), 600) for t in traces]})
    how.append("bootstrapped demos (2, from passing runs on MBPP validation tasks)")
    params: dict[str, list[Any]] = {"code_generator.prompt": values}
    notes["code_generator.prompt"] = how
    tests = task.system.component("test_generator").params["prompt"].default
    params["test_generator.prompt"] = [tests.to_json(), {"instruction": TESTS_SMALL,
                                                         "demos": []}]
    notes["test_generator.prompt"] = ["start", "hand-written: small inputs, exact results"]
    params["executor.keep"] = [3, 0, 1]
    notes["executor.keep"] = ["generated asserts run with the example test"] * 3
    revise = task.system.component("reviser").params["prompt"].default
    params["reviser.prompt"] = [revise.to_json(), {"instruction": REVISE_MINIMAL, "demos": []}]
    notes["reviser.prompt"] = ["start", "hand-written: minimal fix"]
    params["reviser.sees_code"] = [True, False]
    notes["reviser.sees_code"] = ["the failed code is shown (start)", "only the failures"]
    return CandidateSpace(system="code_gen", dataset="mbpp",
                          questions=tuple(e.id for e in examples),
                          params={k: tuple(v) for k, v in params.items()},
                          options={"layout": LAYOUT}, samples=Samples(0, 1.0), notes=notes)


# Hand-written candidates for next_item, aimed at what its bootstrap runs (train sessions)
# show: the 0.5B profiler names candidate [1] whatever it is, and the analyzer copies titles.
PROFILE_COMPARE = ("Compare every numbered candidate with what the shopper is looking for. Reply "
                   "with the number of the candidate of the same kind of product, then its "
                   "product type.")
ANALYZE_TYPES = ("Name the kind of product this shopper keeps clicking, in a few words (for "
                 "example: phone case, dog food). Reply with only the product kind.")


def next_item_space(pool: int, cache: Path) -> CandidateSpace:
    from coalign.component import named_pick
    from coalign.data import load_amazon_sessions
    from coalign.systems import next_item

    # the pool: validation and test sessions; candidates come from train sessions only
    examples = (load_amazon_sessions(split="val") + load_amazon_sessions(split="test"))[:pool]
    outside = load_amazon_sessions(split="train")
    task = next_item("qwen2.5-0.5b", layout=LAYOUT)
    runtime, _ = build_runtime(["qwen2.5-0.5b"], cache, max_workers=1)
    config = task.system.default_config()
    traces, first, right = [], 0, 0
    for e in outside[::10][:16]:  # every language: the train part is sorted by language
        trace = task.score(task.system.run(e.id, e.inputs, config, runtime), e)
        first += named_pick(trace.step("candidate_profiler").outputs["assessment"], 4) == 0
        right += trace.reward == 1.0
        if trace.reward == 1.0 and len(traces) < 2:
            traces.append(trace)
    lm = runtime.lm("qwen2.5-0.5b")
    notes: dict[str, Any] = {
        "pool": f"first {pool} of the val + test sessions (cut per language)",
        "probe": f"start system on 16 train sessions: {right} right, the profiler named "
                 f"candidate 1 on {first}",
        "bootstrap_questions": [t.example_id for t in traces]}
    params: dict[str, list[Any]] = {}
    analyzer = task.system.component("session_analyzer")
    start = analyzer.params["prompt"].default
    step = (traces or [task.system.run(outside[0].id, outside[0].inputs, config, runtime)])[0]
    proposed, tries = propose(lm, analyzer.description,
                              render_fields(step.step("session_analyzer").inputs, 600),
                              render_value(step.step("session_analyzer").outputs, 200),
                              start.instruction, max_shared=0)  # titles leak product names
    values = [start.to_json(), {"instruction": ANALYZE_TYPES, "demos": []}]
    how = ["start", "hand-written: the product kind only"]
    if proposed:
        values.append({"instruction": proposed, "demos": []})
        how.append(f"proposer LM (sample {tries})")
    else:
        values.append({"instruction": EDITS[1](start.instruction), "demos": []})
        how.append(f"edit operator 1 (no clean proposal in {tries} proposer draws)")
    params["session_analyzer.prompt"], notes["session_analyzer.prompt"] = values, how
    profiler = task.system.component("candidate_profiler").params["prompt"].default
    values = [profiler.to_json(), {"instruction": PROFILE_COMPARE, "demos": []}]
    how = ["start", "hand-written: compare every candidate (the start names candidate 1)"]
    if len(traces) >= 2:
        values.append({"instruction": profiler.instruction,
                       "demos": [demo(t.step("candidate_profiler"), 600) for t in traces]})
        how.append("bootstrapped demos (2, from right picks on train sessions)")
    else:
        values.append({"instruction": EDITS[4](profiler.instruction), "demos": []})
        how.append(f"edit operator 4 (only {len(traces)} right bootstrap runs)")
    params["candidate_profiler.prompt"], notes["candidate_profiler.prompt"] = values, how
    return CandidateSpace(system="next_item", dataset="amazon",
                          questions=tuple(e.id for e in examples),
                          params={k: tuple(v) for k, v in params.items()},
                          options={"layout": LAYOUT}, samples=Samples(0, 1.0), notes=notes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("system",
                        choices=["multihop_qa", "multihop_qa_wide", "code_gen", "next_item"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pool", type=int, default=200)
    parser.add_argument("--cache", type=Path, default=Path("runs/table_space/lm_cache.sqlite"))
    args = parser.parse_args()
    make = {"multihop_qa": multihop_space, "multihop_qa_wide": multihop_wide_space,
            "code_gen": code_space,
            "next_item": next_item_space}[args.system]
    space = make(args.pool, args.cache)
    path = space.save(args.out)
    print(json.dumps({"space": str(path), "digest": space.digest,
                      "configs": space.n_configs(), "questions": len(space.questions)}))
    for key, how in space.notes.items():
        print(key, how)


if __name__ == "__main__":
    main()
