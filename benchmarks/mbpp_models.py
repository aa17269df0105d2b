"""code_gen on the sanitized MBPP test split with each bundled model, side by side (live).

Each model runs the system ``coalign evaluate code_gen --data mbpp --model MODEL`` runs (the
same task, prompts and sandbox), problem by problem, every model on a problem before the
next. Every finished problem is appended to ``benchmarks/results/mbpp_models/MODEL.jsonl``
(pass, cost in model seconds, LLM calls) and flushed, so the run can stop at any moment
(``--minutes``, a kill) and a later one, in this session or another, goes on where the
committed lines end. The summary compares the models on
the problems both have finished: pass@1 each, the paired difference with its bootstrap
interval, and the cost per query.

    python -m benchmarks.mbpp_models [--models qwen2.5-0.5b qwen2.5-1.5b] [--minutes 60] \\
        [--shard 0/2 --cache runs/mbpp_models/cache-0.sqlite] \\
        [--json benchmarks/results/mbpp_models.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks._results import ROOT, add_json_option, write_result
from coalign.backends import build_runtime
from coalign.data import load_mbpp
from coalign.optimize import paired_bootstrap
from coalign.runner import evaluate
from coalign.systems import code_gen

PER_PROBLEM = ROOT / "benchmarks" / "results" / "mbpp_models"
MODELS = ("qwen2.5-0.5b", "qwen2.5-1.5b")


def finished(model: str) -> dict[str, dict]:
    """The committed per-problem lines of ``model`` (a torn last line is dropped)."""
    path = PER_PROBLEM / f"{model}.jsonl"
    rows: dict[str, dict] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            rows[row["id"]] = row
    return rows


def extend(models: list[str], deadline: float, cache: Path,
           shard: tuple[int, int] = (0, 1)) -> dict[str, int]:
    """Evaluate each model on the test problems it has not finished, problem by problem and
    model by model within a problem (so a stop leaves the models on common problems), until
    ``deadline``; returns how many problems each added. ``shard`` (i, n): only every n-th
    problem from the i-th, so n processes (each with a cache of its own) share the work."""
    done = {m: finished(m) for m in models}
    problems = load_mbpp(split="test")[shard[0]::shard[1]]
    added = {m: 0 for m in models}
    if all(e.id in done[m] for e in problems for m in models):
        return added
    tasks = {m: code_gen(m) for m in models}
    runtime, _ = build_runtime(list(models), cache, max_workers=1)
    PER_PROBLEM.mkdir(parents=True, exist_ok=True)
    outs = {m: open(PER_PROBLEM / f"{m}.jsonl", "a") for m in models}  # noqa: SIM115
    try:
        for example in problems:
            for m in models:
                if example.id in done[m]:
                    continue
                if time.monotonic() > deadline:
                    return added
                task = tasks[m]
                trace = evaluate(task, [example], task.system.default_config(),
                                 runtime).traces[0]
                outs[m].write(json.dumps({"id": example.id, "pass": trace.reward,
                                          "cost_s": round(trace.cost_s(), 3),
                                          "calls": trace.usage().calls}) + "\n")
                outs[m].flush()
                added[m] += 1
    finally:
        for out in outs.values():
            out.close()
    return added


def summary(models: list[str]) -> dict:
    rows = {m: finished(m) for m in models}
    total = len(load_mbpp(split="test"))
    out: dict = {"test_problems": total, "models": {}}
    for m, by_id in rows.items():
        passes = [r["pass"] for r in by_id.values()]
        out["models"][m] = {"done": len(by_id),
                            "pass_at_1": sum(passes) / len(passes) if passes else None,
                            "cost_per_query_s": (sum(r["cost_s"] for r in by_id.values())
                                                 / len(by_id) if by_id else None)}
    if len(models) == 2:
        common = sorted(set(rows[models[0]]) & set(rows[models[1]]))
        if common:
            a = [rows[models[1]][q]["pass"] for q in common]
            b = [rows[models[0]][q]["pass"] for q in common]
            mean, lo, hi, p = paired_bootstrap(a, b)
            out["paired"] = {"a": models[1], "b": models[0], "problems": len(common),
                             "a_pass_at_1": sum(a) / len(a), "b_pass_at_1": sum(b) / len(b),
                             "mean": mean, "lo": lo, "hi": hi, "p_better": p}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--minutes", type=float, default=None, help="stop after this long")
    ap.add_argument("--cache", type=Path, default=Path("runs/mbpp_models/lm_cache.sqlite"))
    ap.add_argument("--shard", default="0/1", metavar="I/N",
                    help="only every N-th problem from the I-th (one process per shard, "
                         "each with its own --cache); lines are appended whole")
    add_json_option(ap)
    args = ap.parse_args()
    deadline = time.monotonic() + (args.minutes * 60 if args.minutes else float("inf"))
    index, _, count = args.shard.partition("/")
    if not (index.isdigit() and count.isdigit() and int(index) < int(count)):
        ap.error(f"--shard: expected I/N with 0 <= I < N, got {args.shard!r}")
    shard = (int(index), int(count))
    for model, n in extend(args.models, deadline, args.cache, shard).items():
        print(f"{model}: {n} problems added")
    result = summary(args.models)
    for m, s in result["models"].items():
        rate = "-" if s["pass_at_1"] is None else f"{s['pass_at_1']:.3f}"
        cost = "-" if s["cost_per_query_s"] is None else f"{s['cost_per_query_s']:.1f}"
        print(f"  {m:<14} {s['done']:>4}/{result['test_problems']} problems  pass@1 {rate}  "
              f"{cost} model s/query")
    if "paired" in result:
        d = result["paired"]
        print(f"  {d['a']} - {d['b']} on {d['problems']} common problems: {d['mean']:+.3f} "
              f"[{d['lo']:+.3f}, {d['hi']:+.3f}]")
    if args.json:
        write_result(args.json, result)


if __name__ == "__main__":
    main()
