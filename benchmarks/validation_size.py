"""How many validation questions it takes to find a table's headroom (no LLM call).

No optimizer can beat exhaustive search over its validation set: the config best on validation,
scored on held-out test questions. This script measures that search's test gain over the start
config for several validation sizes, over many random splits of the table's pool (the rest of
the pool, at least ``--min-test`` questions, is the test set), with a 95% bootstrap interval
over splits. If the gain stays near zero at the validation size a comparison uses, no method
can be told apart from the start there, however wide the space.

    python -m benchmarks.validation_size benchmarks/tables/multihop_qa_wide \
        --sizes 30 60 100 140 --json benchmarks/results/replay/valsize-multihop_qa_wide.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks._results import add_json_option, write_result
from coalign.tables import Table


def gains(scores: np.ndarray, val_size: int, splits: int, min_test: int,
          seed: int) -> dict:
    """Test gain over the start (config 0) of the config best on ``val_size`` random questions,
    and how often that config is the start itself, over ``splits`` random splits."""
    n = scores.shape[1]
    if val_size + min_test > n:
        raise SystemExit(f"validation size {val_size} leaves fewer than {min_test} of {n} "
                         "questions for test")
    rng = np.random.default_rng(seed)
    out, start_picked = [], 0
    for _ in range(splits):
        order = rng.permutation(n)
        val, test = order[:val_size], order[val_size:]
        picked = int(np.argmax(scores[:, val].mean(axis=1)))  # the first of ties: start wins
        start_picked += picked == 0
        out.append(float(scores[picked, test].mean() - scores[0, test].mean()))
    boot = rng.choice(np.array(out), size=(2000, len(out))).mean(axis=1)
    return {"val": val_size, "test": n - val_size, "splits": splits,
            "gain": float(np.mean(out)), "lo": float(np.quantile(boot, 0.025)),
            "hi": float(np.quantile(boot, 0.975)), "start_picked": start_picked / splits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[30, 60, 100, 140])
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--min-test", type=int, default=40)
    parser.add_argument("--level", default="greedy")
    parser.add_argument("--seed", type=int, default=0)
    add_json_option(parser)
    args = parser.parse_args()
    rewards = Table(args.table).rewards(args.level)
    means = rewards.means()
    rows = [gains(rewards.scores, v, args.splits, args.min_test, args.seed)
            for v in args.sizes]
    n = len(rewards.questions)
    print(f"{args.table}: {n} questions, {len(rewards.configs)} configs; in-sample best global "
          f"{means.max() - means[0]:+.3f} over the start")
    print(f"{'val':>5}{'test':>6}  test gain of the best-on-validation config [95%]   start kept")
    for r in rows:
        print(f"{r['val']:>5}{r['test']:>6}  {r['gain']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}]"
              f"{r['start_picked']:>27.0%}")
    if args.json:
        write_result(args.json, {
            "table": str(args.table), "questions": n, "configs": len(rewards.configs),
            "in_sample_gain": float(means.max() - means[0]), "rows": rows}, indent=1)


if __name__ == "__main__":
    main()
