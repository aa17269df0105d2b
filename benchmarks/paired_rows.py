"""Paired differences between two rows of committed ``replay_compare`` result files.

Two runs of ``benchmarks/replay_compare.py`` on one table with the same seeds and split draw
the same per-seed splits, so a row of one file (coalign with ``--proposals portfolio``, say)
pairs seed by seed with a row of another (the local loop, a baseline), over the seeds both
files hold. Prints, per budget,
the mean of A - B over seeds with its paired bootstrap interval, and writes them as JSON.

    python -m benchmarks.paired_rows A.json[:METHOD] B.json[:METHOD] [--table NAME] \\
        [--json OUT.json]

FILE may be several files joined by ``+`` (a run's first seeds and the seeds added later
with ``replay_compare --first-seed``): their seeds are pooled before anything is picked.
METHOD defaults to ``coalign``; ``best`` is the best baseline at each budget. A
``rule_ablation`` file works too (its rows are its variants), and a ``decider_lr`` file (its
rows are its learning rates, ``FILE:0.3``). TABLE defaults to the files'
only table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks._results import add_json_option, write_result
from coalign.compare import best_baseline
from coalign.optimize import paired_bootstrap


def row(spec: str, table: str | None) -> tuple[str, dict[str, Any], dict[str, list[float]]]:
    """``FILE[:METHOD]`` -> (table name, its entry, the method's per-budget seed scores).
    FILE is a ``replay_compare`` or ``rule_ablation`` result (whose rows are its variants);
    METHOD ``best`` is, per budget, the baseline with the best mean (as replay_compare
    reports it: no coalign row, no reference)."""
    path, _, method = spec.partition(":")
    method = method or "coalign"
    first, *more = path.split("+")
    name, entry = _table_entry(first, table)
    for part in more:
        entry = _pooled(entry, _table_entry(part, table)[1], path)
    if method == "best":
        budgets = next(iter(entry["scores"].values()))
        best = {b: best_baseline(entry["scores"], b) for b in budgets}
        if None in best.values():
            raise SystemExit(f"{path}: no baseline rows in table {name}")
        return name, entry, {b: entry["scores"][m][b] for b, m in best.items()}
    if method not in entry["scores"]:
        raise SystemExit(f"{path}: no row {method!r} in table {name}; rows: "
                         f"{sorted(entry['scores'])}")
    return name, entry, entry["scores"][method]


def _table_entry(path: str, table: str | None) -> tuple[str, dict[str, Any]]:
    data = json.loads(Path(path).read_text())
    tables = data["tables"] if "tables" in data else {Path(data["table"]).name: data}
    name = table or (next(iter(tables)) if len(tables) == 1 else None)
    if name is None or name not in tables:
        raise SystemExit(f"{path}: name one of its tables with --table: {sorted(tables)}")
    entry = tables[name]
    if "lrs" in entry:  # a decider_lr file: one row per learning rate
        entry = {**entry, "scores": {lr: {str(float(b)): v for b, v in r["scores"].items()}
                                     for lr, r in entry["lrs"].items()}}  # "250" -> "250.0"
    return name, entry


def _pooled(entry: dict[str, Any], more: dict[str, Any], path: str) -> dict[str, Any]:
    """Two runs' entries as one: the seeds of both, each row's scores over them (only the
    rows and budgets both hold; the same split, no seed twice)."""
    if entry["split"] != more["split"]:
        raise SystemExit(f"{path}: its files differ in split: {entry['split']} vs "
                         f"{more['split']}")
    shared = set(entry["seeds"]) & set(more["seeds"])
    if shared:
        raise SystemExit(f"{path}: its files share seeds {sorted(shared)}")
    scores = {m: {b: [*by[b], *more["scores"][m][b]] for b in by if b in more["scores"][m]}
              for m, by in entry["scores"].items() if m in more["scores"]}
    return {**entry, "seeds": [*entry["seeds"], *more["seeds"]], "scores": scores}


def paired(a: str, b: str, table: str | None = None) -> dict[str, dict[str, float]]:
    """Per budget both files hold: A - B over the seeds both hold (mean, lo, hi, P(A > B),
    seeds)."""
    name_a, entry_a, rows_a = row(a, table)
    name_b, entry_b, rows_b = row(b, table)
    if entry_a["split"] != entry_b["split"]:
        raise SystemExit(f"{a} and {b} differ in split: {entry_a['split']} vs "
                         f"{entry_b['split']}; only runs on the same split pair")
    # the seeds both hold (a 20-seed ablation against a 40-seed comparison: its first 20)
    seeds = [s for s in entry_a["seeds"] if s in set(entry_b["seeds"])]
    if not seeds:
        raise SystemExit(f"{a} and {b} share no seed: {entry_a['seeds']} vs {entry_b['seeds']}")
    at_a, at_b = ({s: i for i, s in enumerate(e["seeds"])} for e in (entry_a, entry_b))
    out = {}
    for budget in sorted(set(rows_a) & set(rows_b), key=float):
        mean, lo, hi, p = paired_bootstrap([rows_a[budget][at_a[s]] for s in seeds],
                                           [rows_b[budget][at_b[s]] for s in seeds])
        out[budget] = {"mean": mean, "lo": lo, "hi": hi, "p_better": p, "seeds": len(seeds)}
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", help="FILE[:METHOD], the row subtracted from")
    ap.add_argument("b", help="FILE[:METHOD]")
    ap.add_argument("--table")
    add_json_option(ap)
    args = ap.parse_args(argv)
    diffs = paired(args.a, args.b, args.table)
    seeds = next(iter(diffs.values()))["seeds"] if diffs else 0
    print(f"{args.a} - {args.b}, paired over {seeds} seeds [95%]")
    for budget, d in diffs.items():
        print(f"  {float(budget):>6g} runs  {d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]"
              f"  P {d['p_better']:.2f}")
    if args.json:
        write_result(args.json, {"a": args.a, "b": args.b, "paired": diffs})


if __name__ == "__main__":
    main()
