"""The loop's learning rate for a decider's weights, on a replay table (how ``ItemDecider.LR``
was picked): the coalign arm of ``replay_compare.py`` run once per learning rate, on the same
seeds, in this process (the decider reads ``ItemDecider.LR`` when it is built).

    python -m benchmarks.decider_lr benchmarks/tables/next_item --lrs 0.05 0.3 1.0 --seeds 8 \
        --json benchmarks/results/replay/decider-lr-next_item.json

The same protocol picked the REINFORCE baseline's learning rate (8 seeds of this table, three
values), so neither side is tuned more than the other.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks._replay import add_split_option, greedy_lookup
from benchmarks._results import add_json_option, head_commit, write_result
from coalign.compare import coalign_method, compare, split_sizes
from coalign.component import ItemDecider


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", type=Path)
    ap.add_argument("--lrs", type=float, nargs="+", default=[0.05, 0.3, 1.0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--budgets", type=float, nargs="+", default=[250, 500, 1000, 2000])
    add_split_option(ap)
    add_json_option(ap)
    args = ap.parse_args()
    commit = head_commit()
    _, rewards, lookup = greedy_lookup(args.table)
    sizes = split_sizes(len(rewards.questions), args.split)
    seeds = list(range(args.seeds))
    rows: dict[str, dict] = {}
    print(f"{args.table.name}: coalign's mean test metric over {len(seeds)} seeds")
    print(f"{'lr':>6}  " + "  ".join(f"{b:>7g}" for b in args.budgets))
    for lr in args.lrs:
        ItemDecider.LR = lr
        method = coalign_method(args.table, rewards.questions)
        result = compare(lookup, sizes=sizes, seeds=seeds, budgets=args.budgets,
                         methods={"coalign": (method, True)}, workers=1)
        scores = {str(b): [float(s) for s in result.scores["coalign"][b]] for b in args.budgets}
        rows[f"{lr:g}"] = {"scores": scores,
                           "mean": {b: float(np.mean(s)) for b, s in scores.items()}}
        print(f"{lr:>6g}  " + "  ".join(f"{rows[f'{lr:g}']['mean'][str(b)]:7.3f}"
                                        for b in args.budgets))
    if args.json:
        write_result(args.json, {"table": str(args.table), "seeds": seeds, "split": sizes,
                                 "budgets": args.budgets, "lrs": rows}, commit=commit)


if __name__ == "__main__":
    main()
