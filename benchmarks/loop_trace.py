"""Where coalign's loop spends its budget on a replay table: stage 1, then every step.

Per seed, the loop runs on the table exactly as ``replay_compare.py``'s coalign arm does (same
split sizes, ``rollout_n: 0``) and this prints the equivalent full-system runs spent once stage
1 (baseline runs and rollouts for the preference pairs) is paid for, then each step: its
component, the runs spent after it, validation before and after, and its outcome. No LLM call.

    python -m benchmarks.loop_trace benchmarks/tables/code_gen_chunked --seeds 3 \
        --limit 600 --json benchmarks/results/replay/trace-code_gen_chunked.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks._results import add_json_option, write_result
from coalign.compare import LoopMethod, coalign_method, split_sizes
from coalign.tables import CandidateSpace


def trace(method: LoopMethod, seed: int, sizes: tuple[int, int, int], limit: float) -> dict:
    steps: list[dict] = []

    def on_step(job, rec, spent: float) -> None:
        steps.append({"component": rec.component, "spent": spent, "val_before": rec.val_before,
                      "val_after": rec.val_after, "state": rec.state.name.lower()})

    stage1 = method.drive(sizes, seed, limit, on_step)
    return {"seed": seed, "stage1_runs": stage1, "steps": steps}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", type=Path)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--split", type=float, nargs=3, default=[0.2, 0.3, 0.5])
    ap.add_argument("--limit", type=float, default=600, help="stop after this many runs")
    ap.add_argument("--iterations", type=int, default=200)
    add_json_option(ap)
    args = ap.parse_args()
    space = CandidateSpace.load(args.table)
    sizes = split_sizes(len(space.questions), args.split)
    method = coalign_method(args.table, space.questions, max_iterations=args.iterations)
    seeds = [trace(method, s, sizes, args.limit) for s in range(args.seeds)]
    for t in seeds:
        print(f"seed {t['seed']}: stage 1 paid at {t['stage1_runs']:.0f} runs")
        for i, st in enumerate(t["steps"], 1):
            if st["val_after"] is None:
                continue  # a step that validated nothing (no change, skipped)
            print(f"  step {i:>3} {st['component']:<18} at {st['spent']:>6.0f} runs: val "
                  f"{st['val_before']:.3f} -> {st['val_after']:.3f} {st['state']}")
    first = [next((st["spent"] for st in t["steps"] if st["state"] == "accepted"), None)
             for t in seeds]
    print("stage 1 runs: " + ", ".join(f"{t['stage1_runs']:.0f}" for t in seeds)
          + "; first acceptance at: " + ", ".join("-" if f is None else f"{f:.0f}"
                                                  for f in first))
    if args.json:
        write_result(args.json, {
            "table": str(args.table), "split": list(sizes), "limit": args.limit,
            "seeds": seeds, "first_acceptance": first}, indent=1)


if __name__ == "__main__":
    main()
