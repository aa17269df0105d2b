"""What picking a config on more questions could buy: exhaustive selection on the validation
split against exhaustive selection on validation and train together, on a replay table.

Issue 39 item 3 asks for more validation questions where a decision is close. The most any
such rule can add is bounded by this probe: every config of the space is scored (no LLM call,
no budget) and the one with the best mean on the picking questions is scored on test, over the
seeds' splits of ``replay_compare`` (train / val / test 0.2 / 0.3 / 0.5). If picking on val and
train together is not better on test than picking on val alone, a gate that draws the train
questions as extra validation evidence cannot be either; the configs above the start are then
closer than 50 to 100 questions can tell apart (the winner's curse over the whole space).

    python -m benchmarks.selection_ceiling benchmarks/tables/{code_gen,multihop_qa} --seeds 40 \
        --json benchmarks/results/replay/selection-ceiling.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks._replay import add_split_option, greedy_lookup
from benchmarks._results import add_json_option, head_commit, write_result
from coalign.compare import draw_split, split_sizes
from coalign.optimize import paired_bootstrap

PICKS = ("start", "val", "val+train", "test (best global config)")


def picks(scores: np.ndarray, train: list[int], val: list[int], test: list[int]) -> dict:
    """Test metric of the start and of the config picked on each set of questions."""
    def on_test(picking: list[int]) -> float:
        return float(scores[int(np.argmax(scores[:, picking].mean(axis=1))), test].mean())
    return {"start": float(scores[0, test].mean()), "val": on_test(val),
            "val+train": on_test(val + train), "test (best global config)": on_test(test)}


def table_row(directory: Path, seeds: list[int], split: list[float]) -> dict:
    scores = greedy_lookup(directory)[2].scores
    sizes = split_sizes(scores.shape[1], split)
    per_seed = []
    for seed in seeds:
        s = draw_split(scores.shape[1], sizes, seed)
        per_seed.append(picks(scores, list(s.train), list(s.val), list(s.test)))
    out = {p: [r[p] for r in per_seed] for p in PICKS}
    _, lo, hi, _ = paired_bootstrap(out["val+train"], out["val"])
    diff = float(np.mean(out["val+train"]) - np.mean(out["val"]))
    return {"configs": int(scores.shape[0]), "split": list(sizes), "test": out,
            "mean": {p: float(np.mean(v)) for p, v in out.items()},
            "val+train - val": {"mean": diff, "lo": float(lo), "hi": float(hi)}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", type=Path, nargs="+")
    ap.add_argument("--seeds", type=int, default=40)
    add_split_option(ap)
    add_json_option(ap)
    args = ap.parse_args()
    commit = head_commit()
    seeds = list(range(args.seeds))
    rows = {}
    print(f"test metric of the config picked exhaustively, mean of {len(seeds)} seeds")
    print(f"{'table':24}{'configs':>8}{'split':>12}" + "".join(f"{p[:12]:>14}" for p in PICKS)
          + "  val+train - val [95%]")
    for directory in args.tables:
        r = rows[directory.name] = table_row(directory, seeds, args.split)
        d = r["val+train - val"]
        print(f"{directory.name:24}{r['configs']:>8}{'/'.join(map(str, r['split'])):>12}"
              + "".join(f"{r['mean'][p]:>14.3f}" for p in PICKS)
              + f"  {d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]")
    if args.json:
        write_result(args.json, {"seeds": seeds, "split_fractions": args.split, "tables": rows},
                     commit=commit)


if __name__ == "__main__":
    main()
