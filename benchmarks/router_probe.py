"""Can a per-input router close the per-input oracle's gap? A probe on the replay tables.

The per-instance rows of ``replay_compare`` (a selector trained on the local reward) close none
of the gap between the best global config and the per-input oracle. This probe asks whether a
router trained on *validation outcomes* could, under conditions kinder than a run's: per seed
(the split of ``replay_compare``), the base is the best config on validation (what an
exhaustive search returns), and for every config that differs from it only in the space's
Choice slots the router knows the reward on every train and validation question (a run would
pay |options| x (train + val) runs for that). It fits, per such config, a ridge regression of
the reward gain over the base on the question's MiniLM embedding, and routes each test question
to the config with the highest predicted gain (the base where none is predicted above 0).

Per table it prints the base on test, the router on test, the per-input oracle from the base,
the share of the oracle's gap the router closes, and the paired router - base interval over
seeds; ``--json`` writes them with the per-seed figures.

    python -m benchmarks.router_probe [TABLE ...] [--seeds 20] \
        [--json benchmarks/results/replay/router_probe.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks._replay import add_split_option, greedy_lookup
from benchmarks._results import add_json_option, write_result
from benchmarks.replay_compare import choice_slots
from coalign.compare import Lookup, draw_split, split_sizes
from coalign.stats import paired_bootstrap
from coalign.tables import Table, find_tables

ALPHAS = (0.1, 1.0, 10.0, 100.0)


def question_texts(table: Table, questions: tuple[str, ...]) -> list[str]:
    """Each question's inputs as one text, in ``questions`` order."""
    by_id = {e.id: e for e in table.finished()}
    return [" ".join(str(v)[:2000] for v in by_id[q].inputs.values()
                     if isinstance(v, str | int | float)) or json.dumps(by_id[q].inputs,
                                                                        default=str)[:2000]
            for q in questions]


def siblings(lookup: Lookup, base: int, slots: list[str]) -> list[int]:
    """The configs equal to ``base`` outside ``slots`` (``base`` first)."""
    free = {lookup.slots.index(s) for s in slots}
    row = lookup.index[base]
    same = [i for i, r in enumerate(lookup.index)
            if all(r[j] == row[j] for j in range(len(row)) if j not in free)]
    return [base, *[i for i in same if i != base]]


def route(x: np.ndarray, gains: np.ndarray, fit_q: list[int], test_q: list[int]) -> np.ndarray:
    """Per test question, the index (into ``gains``' rows) of the config routed to: the highest
    predicted gain by a ridge fit per row on ``fit_q``, or 0 (the base) where none is > 0."""
    from sklearn.linear_model import RidgeCV

    predicted = np.zeros((len(gains), len(test_q)))
    for r in range(1, len(gains)):
        y = gains[r, fit_q]
        if not np.any(y):  # never differs from the base where it was seen
            predicted[r] = -1.0
            continue
        model = RidgeCV(alphas=ALPHAS).fit(x[fit_q], y)
        predicted[r] = model.predict(x[test_q])
    best = predicted.argmax(axis=0)
    return np.where(predicted.max(axis=0) > 0, best, 0)


def probe(directory: Path, seeds: list[int], fractions: list[float]) -> dict:
    from coalign.rewards import MiniLMBackbone

    table, rewards, lookup = greedy_lookup(directory)
    slots = choice_slots(table.space)
    x = MiniLMBackbone().embed(question_texts(table, rewards.questions))
    n = len(rewards.questions)
    sizes = split_sizes(n, fractions)
    rows = []
    for seed in seeds:
        split = draw_split(n, sizes, seed)
        base = rewards.best(split.val)
        configs = siblings(lookup, base, slots)
        scores = lookup.scores[configs]
        gains = scores - scores[0]
        test = list(split.test)
        picked = route(x, gains, [*split.train, *split.val], test)
        routed = scores[picked, test]
        rows.append({"seed": seed, "base": base, "configs": len(configs),
                     "base_test": float(scores[0, test].mean()),
                     "router_test": float(routed.mean()),
                     "oracle_test": float(scores[:, test].max(axis=0).mean()),
                     "routed_away": float(np.mean(picked != 0)),
                     "per_question": [float(v) for v in routed - scores[0, test]]})
    base = np.array([r["base_test"] for r in rows])
    router = np.array([r["router_test"] for r in rows])
    oracle = np.array([r["oracle_test"] for r in rows])
    gap = float(oracle.mean() - base.mean())
    mean, lo, hi, _ = paired_bootstrap(router.tolist(), base.tolist(), seed=0)
    return {"table": str(directory), "slots": slots, "questions": n, "split": list(sizes),
            "base_test": float(base.mean()), "router_test": float(router.mean()),
            "oracle_test": float(oracle.mean()), "gap": gap,
            "closed": (float(router.mean() - base.mean()) / gap) if gap > 0 else None,
            "router_minus_base": {"mean": mean, "lo": lo, "hi": hi},
            "routed_away": float(np.mean([r["routed_away"] for r in rows])), "seeds": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", type=Path, nargs="*",
                    help="table directories (default: every finished one in benchmarks/tables)")
    ap.add_argument("--seeds", type=int, default=20)
    add_split_option(ap)
    add_json_option(ap)
    args = ap.parse_args()
    out = {"tables": {}}
    print(f"{'table':<22}{'slots':>6}{'base':>8}{'router':>8}{'oracle':>8}{'closed':>8}"
          f"{'routed':>8}  router - base [95%]")
    for directory in args.tables or find_tables(complete="greedy"):
        r = probe(directory, list(range(args.seeds)), args.split)
        out["tables"][Path(directory).name] = r
        d = r["router_minus_base"]
        closed = "-" if r["closed"] is None else f"{r['closed']:+.2f}"
        print(f"{Path(directory).name:<22}{len(r['slots']):>6}{r['base_test']:>8.3f}"
              f"{r['router_test']:>8.3f}{r['oracle_test']:>8.3f}{closed:>8}"
              f"{r['routed_away']:>8.2f}  {d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]")
    if args.json:
        write_result(args.json, out, indent=1)


if __name__ == "__main__":
    main()
