"""next_item on the Amazon session data: the unoptimized system against simple baselines.

Rows (test split unless ``--split``; accuracy with a 95% bootstrap interval over sessions):
- always the first candidate; random (its exact expectation, 1/number of candidates);
- embedding similarity alone: the candidate closest to the mean session item (MiniLM; the
  decider's ``cos_session_mean`` feature, no LLM);
- single LLM: one call shown the session and the numbered candidates, its named number taken;
- the unoptimized ``next_item`` system (analyzer -> profiler -> untrained decider), with how
  often its profiler named the first candidate.
LLM calls go through a response cache in ``--run-dir``, so a rerun resumes. With ``--table DIR``
every LLM output comes from that replay table instead (no LLM call): the sessions are the
table's finished questions and the single-LLM row, whose prompt the table does not hold, is left
out.

    python -m benchmarks.next_item_baselines [--limit N] [--json P]
    python -m benchmarks.next_item_baselines --table benchmarks/tables/next_item \
        --json benchmarks/results/replay/next_item-baselines.json
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import torch

from benchmarks._results import add_json_option, write_result
from coalign.backends import REPLAY, build_runtime
from coalign.component import FEATURES, ItemDecider, LLMComponent, named_pick
from coalign.data import get_metric, load_amazon_sessions
from coalign.runner import CACHE_NAME, evaluate
from coalign.system import System
from coalign.systems import next_item
from coalign.tables import Table
from coalign.task import Task

PICK = ("The shopper clicked the session's products in order. Which numbered candidate will "
        "they click next? Reply with its number only.")


def interval(scores: list[float], seed: int = 0, samples: int = 2000) -> list[float]:
    rng = random.Random(seed)
    n = len(scores)
    means = sorted(sum(scores[rng.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    return [means[int(0.025 * samples)], means[int(0.975 * samples) - 1]]


def row(name: str, scores: list[float], **extra) -> dict:
    mean = sum(scores) / len(scores)
    return {"method": name, "accuracy": mean, "ci95": interval(scores), "n": len(scores),
            **extra}


def single_llm(model: str) -> Task:
    """One LLM call picks; the (untrained) decider reads the number it names."""
    system = System("single_llm", [
        LLMComponent("picker", ["session", "choices"], "assessment", PICK, model=model,
                     max_tokens=8, field_limit=1600),
        ItemDecider("decider", interests_field="session"),
    ], inputs=["session", "choices"], output="choice")
    return Task(system, get_metric("accuracy"), "accuracy")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--run-dir", type=Path, default=Path("runs/next_item_baselines"))
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--table", type=Path, help="replay table to answer every LLM call")
    add_json_option(ap)
    args = ap.parse_args()
    table = Table(args.table) if args.table else None
    examples = (table.finished() if table else
                load_amazon_sessions(split=args.split, limit=args.limit))[:args.limit]
    metric = get_metric("accuracy")
    rows = [row("always first", [metric("0", e) for e in examples]),
            row("random (expected)", [1 / len(e.inputs["choices"]) for e in examples])]
    sim = ItemDecider("similarity")
    col = FEATURES.index("cos_session_mean")
    picks = []
    for e in examples:
        feats = sim.features({"session": e.inputs["session"], "interests": "",
                              "assessment": "", "choices": e.inputs["choices"]})
        picks.append(str(int(torch.argmax(feats[:, col]))))
    rows.append(row("embedding similarity (no LLM)",
                    [metric(p, e) for p, e in zip(picks, examples, strict=True)]))
    if table:
        runtime, meter = build_runtime([table.space.model], None, lm=f"{REPLAY}{args.table}")
        systems = [("next_item unoptimized", table.space.task(), "candidate_profiler")]
    else:
        args.run_dir.mkdir(parents=True, exist_ok=True)
        runtime, meter = build_runtime([args.model], args.run_dir / CACHE_NAME,
                                       max_workers=args.workers)
        systems = [("single LLM", single_llm(args.model), "picker"),
                   ("next_item unoptimized", next_item(args.model), "candidate_profiler")]
    for name, task, probe in systems:
        t0 = time.perf_counter()
        res = evaluate(task, examples, task.system.default_config(), runtime)
        named = [named_pick(t.step(probe).outputs["assessment"], len(e.inputs["choices"]))
                 for t, e in zip(res.traces, examples, strict=True)]
        rows.append(row(name, res.scores, wall_s=round(time.perf_counter() - t0, 1),
                        named_first=sum(n == 0 for n in named) / len(named),
                        named_none=sum(n is None for n in named) / len(named)))
    print(f"{'method':<32} {'accuracy':>8}  95% interval      n")
    for r in rows:
        lo, hi = r["ci95"]
        print(f"{r['method']:<32} {r['accuracy']:>8.3f}  [{lo:.3f}, {hi:.3f}]  {r['n']}")
    if args.json:
        source = ({"table": str(args.table), "space": table.space.digest} if table else
                  {"split": args.split, "model": args.model})
        write_result(args.json, {**source, "sessions": len(examples),
                                 # on a table every call is a replayed answer
                                 ("replayed_calls" if table else "llm_calls"):
                                     meter.total().calls,
                                 "rows": rows})


if __name__ == "__main__":
    main()
