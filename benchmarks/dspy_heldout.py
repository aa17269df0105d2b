"""Saved DSPy programs of `examples/dspy_program.py`, scored on more held-out questions, paired.

The example's own held-out set is 12 questions, too few to tell two programs apart (per-question
F1 varies by about 0.45). This loads each saved program (and the unoptimized one), answers the
same ``--test`` HotpotQA dev questions from ``--offset`` with each, and reports mean F1 and, for
every two of them, the paired difference with a 95% bootstrap interval over questions.

    COALIGN_LM_THREADS=1 python -m benchmarks.dspy_heldout \
        benchmarks/results/dspy/multihop_qa_12q_rule12_on.program.json \
        benchmarks/results/dspy/multihop_qa_12q_rule12_off.program.json \
        --offset 12 --test 48 --json benchmarks/results/dspy/rule12_heldout.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import dspy
import numpy as np

from benchmarks._results import ROOT, add_json_option, write_result
from coalign.dspy import CoalignLM
from coalign.stats import paired_bootstrap
from examples.dspy_program import MultiHopQA, examples, f1


def paired(a: list[float], b: list[float]) -> dict:
    """Mean of b - a with its 95% bootstrap interval over questions (the gate's bootstrap)."""
    mean, lo, hi, _ = paired_bootstrap(b, a, samples=10_000, seed=0)
    return {"mean": mean, "ci95": [lo, hi],
            "questions_better": sum(y > x for x, y in zip(a, b, strict=True)),
            "questions_worse": sum(y < x for x, y in zip(a, b, strict=True))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", type=Path, nargs="+")
    parser.add_argument("--offset", type=int, default=12, help="first HotpotQA dev row")
    parser.add_argument("--test", type=int, default=48)
    parser.add_argument("--model", default="qwen2.5-0.5b")
    parser.add_argument("--cache", type=Path, default=ROOT / "runs" / "dspy_heldout" / "lm.sqlite")
    add_json_option(parser)
    args = parser.parse_args()
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    lm = CoalignLM(args.model, cache=args.cache, max_tokens=48)  # as the example's runs
    dspy.configure(lm=lm, adapter=dspy.ChatAdapter(use_json_adapter_fallback=False))
    test = examples(args.test, args.offset)
    scores: dict[str, list[float]] = {}
    t0 = time.perf_counter()
    for path in [None, *args.programs]:
        program = MultiHopQA()
        if path is not None:
            program.load(str(path))
        name = "unoptimized" if path is None else path.name.removesuffix(".program.json")
        row = []
        for ex in test:
            try:
                row.append(f1(ex, program(**ex.inputs())))
            except Exception:  # a reply DSPy cannot parse scores 0, as in dspy.Evaluate
                row.append(0.0)
        scores[name] = row
        print(f"{name}: F1 {np.mean(row):.3f} on {len(row)} questions "
              f"({time.perf_counter() - t0:.0f} s so far)", flush=True)
    names = list(scores)
    versus = {f"{b} - {a}": paired(scores[a], scores[b])
              for i, a in enumerate(names) for b in names[i + 1:]}
    for key, d in versus.items():
        print(f"{key}: {d['mean']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] "
              f"({d['questions_better']} better, {d['questions_worse']} worse)")
    if args.json:
        write_result(args.json, {
            "questions": {"offset": args.offset, "n": args.test,
                          "source": "HotpotQA dev (shared/data), rows offset..offset+n-1"},
            "model": args.model, "mean_f1": {n: float(np.mean(s)) for n, s in scores.items()},
            "paired": versus, "per_question": scores,
            "seconds": time.perf_counter() - t0})


if __name__ == "__main__":
    main()
