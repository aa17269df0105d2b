"""A DSPy program of one's own, optimized by coalign on the local LLM, saved and evaluated by DSPy.

The program below uses DSPy's public API only: a query writer, a Python BM25 retrieval over the
question's own HotpotQA paragraphs, and an answer writer. coalign optimizes the two predictors'
instructions and demos (``coalign.dspy.optimize``), writes them back into the program, which is
then saved with ``program.save()`` and scored with ``dspy.Evaluate`` before and after on
held-out questions. Figures are printed and written as JSON.

    COALIGN_LM_THREADS=1 .venv/bin/python examples/dspy_program.py            # ~15 min, 1 thread
    .venv/bin/python examples/dspy_program.py --train 2 --val 2 --test 2 --iterations 1  # smoke

Sizes are tiny (a shared 2-core machine, 5-20 s per call): per-question F1 varies by about
0.45, so a difference on a handful of held-out questions is noise. The JSON says so; read it as a
demonstration of the path, not as a measured gain.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import dspy

from coalign.data import f1_score, load_hotpotqa
from coalign.dspy import CoalignLM, optimize
from coalign.errors import CoalignError
from coalign.retrieval import BM25Index

ROOT = Path(__file__).resolve().parents[1]
PASSAGE_CHARS = 350  # keep prompts short: prompt tokens dominate a small CPU model's time


def retrieve(query: str, paragraphs: list[dict], k: int = 2) -> list[str]:
    """The ``k`` paragraphs of this question that BM25 ranks first for ``query``."""
    texts = [f"{p['title']}: {p['text']}" for p in paragraphs]
    return [texts[i][:PASSAGE_CHARS] for i in BM25Index(texts).search(query, k)]


class MultiHopQA(dspy.Module):
    """Write a search query, retrieve from the question's paragraphs, answer from them."""

    def __init__(self) -> None:
        super().__init__()
        self.query = dspy.Predict("question -> search_query")
        self.answer = dspy.Predict("question, passages -> answer")

    def forward(self, question: str, paragraphs: list[dict]) -> dspy.Prediction:
        query = self.query(question=question).search_query
        passages = retrieve(f"{query} {question}", paragraphs)
        return self.answer(question=question, passages=passages)


def f1(example: dspy.Example, pred: dspy.Prediction, trace: object = None) -> float:
    return f1_score(str(pred.answer or ""), example.answer)


def examples(n: int, offset: int) -> list[dspy.Example]:
    rows = load_hotpotqa(limit=offset + n)[offset:]
    return [dspy.Example(question=e.inputs["question"], paragraphs=e.inputs["paragraphs"],
                         answer=e.target).with_inputs("question", "paragraphs") for e in rows]


def instructions(program: dspy.Module) -> dict[str, str]:
    return {name: p.signature.instructions for name, p in program.named_predictors()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--train", type=int, default=3)
    ap.add_argument("--val", type=int, default=3)
    ap.add_argument("--test", type=int, default=6)
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--candidates", type=int, default=2, help="candidate values per step")
    ap.add_argument("--proposer", action="store_true",
                    help="let the model propose instructions too (one more call per step)")
    ap.add_argument("--no-rollout-demos", action="store_true",
                    help="bootstrap demos from the search sample's outputs only (loop rule 12 "
                         "off), not also from the outputs that won rollout pairs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--run-dir", type=Path, default=ROOT / "runs" / "dspy_program")
    ap.add_argument("--out", type=Path,
                    default=ROOT / "benchmarks" / "results" / "dspy" / "multihop_qa.json")
    args = ap.parse_args()

    args.run_dir.mkdir(parents=True, exist_ok=True)
    lm = CoalignLM(args.model, cache=args.run_dir / "lm_cache.sqlite", max_tokens=48)
    # a small model often breaks DSPy's field markers: one reply per call, no JSON retry
    dspy.configure(lm=lm, adapter=dspy.ChatAdapter(use_json_adapter_fallback=False))
    test = examples(args.test, 0)  # held out: HotpotQA dev rows 0..test-1
    train = examples(args.train, 200)
    val = examples(args.val, 200 + args.train)
    program = MultiHopQA()
    start = instructions(program)
    evaluate = dspy.Evaluate(devset=test, metric=f1, num_threads=1, display_progress=False,
                             max_errors=len(test) + 1)  # a failed parse scores 0
    t0 = time.perf_counter()
    before = evaluate(program).score
    t_before = time.perf_counter() - t0
    result = optimize(program, train, f1, valset=val,
                      budget={"iterations": args.iterations, "search_size": 3,
                              "fresh_inputs": 2, "rollout_n": 0, "text_alternatives": 2,
                              "text_candidates": args.candidates, "text_steps": 1,
                              "rollout_demos": not args.no_rollout_demos},
                      proposer=lm if args.proposer else None,
                      run_dir=args.run_dir / "store", seed=args.seed,
                      on_step=lambda r: print(f"  step {r.step}: {r.component} "
                                              f"{'accepted' if r.accepted else 'rejected'} "
                                              f"({r.reason})", flush=True))
    t_opt = time.perf_counter() - t0 - t_before
    saved = args.run_dir / "program.json"
    program.save(str(saved))
    reloaded = MultiHopQA()
    reloaded.load(str(saved))
    after = evaluate(reloaded).score
    t_total = time.perf_counter() - t0
    report = {
        "program": "MultiHopQA (query writer -> BM25 top-2 -> answer writer)",
        "model": args.model, "lm_threads": os.environ.get("COALIGN_LM_THREADS"),
        "data": "HotpotQA dev (shared/data hotpotqa_dev_unified.jsonl): test rows 0.."
                f"{args.test - 1}, train/val from row 200",
        "sizes": {"train": args.train, "val": args.val, "test": args.test,
                  "iterations": args.iterations, "candidates_per_step": args.candidates,
                  "proposer": args.proposer, "rollout_demos": not args.no_rollout_demos},
        "dspy_evaluate_f1_percent": {"before": before, "after": after},
        "coalign_val_f1": {"before": result.val_before, "after": result.val_after},
        "instructions_before": start, "instructions_after": instructions(reloaded),
        "demos_after": {n: len(p.demos) for n, p in reloaded.named_predictors()},
        "changed": result.changed,
        "steps": [{"step": r.step, "component": r.component, "accepted": r.accepted,
                   "reason": r.reason, "val_before": r.val_before, "val_after": r.val_after}
                  for r in result.history],
        "equivalent_runs": result.ledger.runs, "llm_calls": result.ledger.llm_calls,
        "seconds": {"evaluate_before": round(t_before, 1), "optimize": round(t_opt, 1),
                    "total": round(t_total, 1)},
        "saved": str(saved.relative_to(ROOT)) if saved.is_relative_to(ROOT) else str(saved),
        "caveat": f"{args.test} held-out and {args.val} validation questions; per-question F1 "
                  "has SD about 0.45, so any before/after difference here is within noise",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(args.out)
    print(f"dspy.Evaluate F1 on {args.test} held-out questions: before {before:.1f}, "
          f"after {after:.1f}")
    print(f"coalign validation F1 ({args.val} questions): {result.val_before:.3f} -> "
          f"{result.val_after:.3f}; changed: {result.changed or 'nothing'}")
    for name, text in instructions(reloaded).items():
        print(f"  {name}: {text!r}" + ("" if text == start[name] else f" (was {start[name]!r})"))
    print(f"saved {saved}; wrote {args.out} ({t_total:.0f} s)")


if __name__ == "__main__":
    try:
        main()
    except CoalignError as exc:  # a user's mistake (a model, a path): one line, as the CLI does
        sys.exit(f"error: {exc}")
