"""Headroom of a replay table: starting config, best global config and per-question oracle.

Every config of the space is evaluated on replay (no LLM call) over the table's finished
questions. A space tells optimizers apart only if the best global config is clearly above the
start and exhaustive search costs well above the budgets compared; per-instance choices need the
per-question oracle above the best global config. The best global config is picked on the same
questions it is scored on (optimistic); ``--holdout`` also picks it on one half and scores it on
the other.

    python benchmarks/table_headroom.py benchmarks/tables/multihop_qa \
        --json benchmarks/results/replay/headroom-multihop_qa.json
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import time
from pathlib import Path

from coalign.tables import Table


def describe(config, space) -> dict:
    """The config as indices into each param's candidate list (short, and stable)."""
    data = config.to_json()
    out = {}
    for key, values in space.params.items():
        comp, _, pname = key.partition(".")
        value = data[comp][pname]
        out[key] = next(i for i, v in enumerate(values)
                        if json.dumps(v, sort_keys=True) == json.dumps(value, sort_keys=True))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("--level", default="greedy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    table = Table(args.table)
    space = table.space
    t0 = time.perf_counter()
    rewards = table.rewards(args.level)
    wall = time.perf_counter() - t0
    n, configs = len(rewards.questions), rewards.configs
    if n < 2:
        raise SystemExit(f"only {n} finished question(s) in {args.table}")
    means = rewards.means()
    best, worst = rewards.best(), int(means.argmin())
    oracle = rewards.oracle()
    rng = random.Random(args.seed)
    order = list(range(n))
    rng.shuffle(order)
    pick, held = order[: n // 2], order[n // 2:]
    picked = rewards.best(pick)
    held_start = float(rewards.means(held)[0])
    held_best = float(rewards.means(held)[picked])
    result = {
        "table": str(args.table), "space": space.digest, "questions": n,
        "configs": len(configs), "replay_wall_s": wall,
        "start": float(means[0]), "best_global": float(means[best]),
        "worst_global": float(means[worst]),
        "oracle_per_question": oracle, "best_config": describe(configs[best], space),
        "holdout": {"picked_on": len(pick), "scored_on": len(held), "start": held_start,
                    "picked": held_best, "picked_config": describe(configs[picked], space)},
        "ranked": sorted(((float(means[i]), describe(c, space)) for i, c in enumerate(configs)),
                         key=lambda t: -t[0])[:10],
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                                 text=True).stdout.strip(),
    }
    print(f"{n} questions, {len(configs)} configs evaluated on replay in {wall:.1f} s")
    print(f"start {means[0]:.3f}  best global {means[best]:.3f}  worst {means[worst]:.3f}  "
          f"per-question oracle {oracle:.3f}")
    print(f"picked on {len(pick)} questions, scored on the other {len(held)}: start "
          f"{held_start:.3f}, picked {held_best:.3f}")
    print("best config:", result["best_config"])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
