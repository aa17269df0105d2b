"""A per-input cascade over Choice values, gated by the output's gold-free checks, on replay.

``router_probe`` showed that which Choice value wins a question cannot be read off the
question's text. A cascade reads the *output* instead: it runs the base config (the best on
validation), and where the system's output fails the checks its last component declares
(code: the task's example test), it runs the next config of a chain and keeps the first output
that passes. The chain holds configs that differ from the base only in the space's Choice
slots (what a per-input policy may vary) and is fitted on the train and validation questions,
as ``router_probe``'s router is: each next link is the sibling with the best mean reward on the
fit questions every earlier link failed. Cost is counted in full: every config run on a
question adds its model seconds (a shared upstream prefix is paid again; an upper bound).

Per table and chain depth it prints the base, the cascade and the per-input oracle on test,
the share of the oracle's gap the cascade closes, its cost against the base's, and the paired
cascade - base interval over seeds; ``--json`` writes them with the per-seed figures. A table
whose output component declares no check is reported as such.

    python -m benchmarks.cascade_probe [TABLE ...] [--seeds 20] [--depth 1 2] \
        [--json benchmarks/results/replay/cascade_probe.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks._results import add_json_option, write_result
from benchmarks.replay_compare import choice_slots
from benchmarks.router_probe import siblings
from coalign.compare import Lookup, draw_split, split_sizes
from coalign.pairs import canonical_json
from coalign.stats import paired_bootstrap
from coalign.rewards import Check
from coalign.tables import Rewards, Table, find_tables
from coalign.task import Task

def declared_checks(task: Task) -> tuple[Check, ...]:
    """The checks of the component that writes the system's output (none: no cascade)."""
    system = task.system
    last = next(c for c in system.components if system.output in c.outputs)
    return tuple(getattr(last, "checks", ()))


def output_checks(table: Table, rewards: Rewards) -> np.ndarray:
    """``checks[config, question]``: the mean of the output component's checks on the system's
    output (NaN where none applies), in ``rewards``' order."""
    from coalign.runner import evaluate
    from coalign.runtime import Runtime

    task = table.space.task()
    system, checks = task.system, declared_checks(task)
    by_id = {e.id: e for e in table.finished()}
    examples = [by_id[q] for q in rewards.questions]
    runtime = Runtime(lms=table.lms(), max_workers=2, seed=0)
    memo: dict[str, float] = {}
    out = np.full(rewards.scores.shape, np.nan)
    for i, config in enumerate(rewards.configs):
        for j, trace in enumerate(evaluate(task, examples, config, runtime).traces):
            outputs = {system.output: trace.state.get(system.output)}
            key = canonical_json([trace.inputs, outputs])
            if key not in memo:
                got = [v for v in (c(trace.inputs, outputs) for c in checks) if v is not None]
                memo[key] = float(np.mean(got)) if got else float("nan")
            out[i, j] = memo[key]
    return out


def fit_chain(scores: np.ndarray, passed: np.ndarray, fit: list[int], depth: int) -> list[int]:
    """Row indices of a cascade over ``scores``' rows (row 0, the base, first): each next link
    is the unused row with the best mean score on the ``fit`` questions every earlier link
    failed (``passed`` False); ties go to the row that passes there more often, then to the
    best mean over all of ``fit``. No stopping rule on the means: a link's output replaces the
    base's only where it passes and every earlier one failed, which the checks' precision
    makes a gain in expectation, so depth is the cost knob alone."""
    chain, left = [0], [int(q) for q in fit]
    overall = scores[:, fit].mean(axis=1)
    while len(chain) <= depth and len(chain) < len(scores):
        left = [q for q in left if not passed[chain[-1], q]]
        unused = [r for r in range(len(scores)) if r not in chain]
        key = [(scores[r, left].mean() if left else 0.0,
                passed[r, left].mean() if left else 0.0, overall[r]) for r in unused]
        chain.append(unused[max(range(len(unused)), key=key.__getitem__)])
    return chain


def run_chain(chain: list[int], passed: np.ndarray, test: list[int]) -> np.ndarray:
    """Per test question, how many links of ``chain`` ran (the first that passes stops it)."""
    ran = np.full(len(test), len(chain))
    for k, q in enumerate(test):
        for depth, row in enumerate(chain):
            if passed[row, q]:
                ran[k] = depth + 1
                break
    return ran


def probe(directory: Path, seeds: list[int], fractions: list[float],
          depths: list[int]) -> dict:
    table = Table(directory)
    slots = choice_slots(table.space)
    head = {"table": str(directory), "slots": slots}
    if not slots or not declared_checks(table.space.task()):
        return {**head, "skipped": "no Choice slot" if not slots else "no output check"}
    rewards = table.rewards()
    n = len(rewards.questions)
    sizes = split_sizes(n, fractions)
    head.update(questions=n, split=list(sizes))
    checks = output_checks(table, rewards)
    lookup = Lookup.of_table(rewards, table.space)
    costs = rewards.costs if rewards.costs is not None else np.zeros_like(rewards.scores)
    per_depth: dict[int, list[dict]] = {d: [] for d in depths}
    for seed in seeds:
        split = draw_split(n, sizes, seed)
        configs = siblings(lookup, rewards.best(split.val), slots)
        scores, passed = lookup.scores[configs], checks[configs] >= 1.0
        test, fit = list(split.test), [*split.train, *split.val]
        base, oracle = scores[0, test], scores[:, test].max(axis=0)
        for depth in depths:
            chain = fit_chain(scores, passed, fit, depth)
            ran = run_chain(chain, passed, test)
            # the first passing link answers; where none passes, the base's output stands
            answer = [chain[r - 1] if passed[chain[r - 1], q] else 0
                      for r, q in zip(ran, test, strict=True)]
            spent = [costs[[configs[c] for c in chain[:r]], q].sum()
                     for r, q in zip(ran, test, strict=True)]
            per_depth[depth].append({
                "seed": seed, "chain": [int(configs[c]) for c in chain],
                "base_test": float(base.mean()),
                "cascade_test": float(scores[answer, test].mean()),
                "oracle_test": float(oracle.mean()),
                "escalated": float(np.mean(ran > 1)),
                "cost_ratio": float(np.mean(spent) / max(costs[configs[0], test].mean(), 1e-9))})
    return {**head, "output_pass_rate": float(np.nanmean(checks >= 1.0)),
            "depths": {str(d): summarize(rows) for d, rows in per_depth.items()}}


def summarize(rows: list[dict]) -> dict:
    base, cascade, oracle = (np.array([r[k] for r in rows])
                             for k in ("base_test", "cascade_test", "oracle_test"))
    gap = float(oracle.mean() - base.mean())
    mean, lo, hi, _ = paired_bootstrap(cascade.tolist(), base.tolist(), seed=0)
    return {"base_test": float(base.mean()), "cascade_test": float(cascade.mean()),
            "oracle_test": float(oracle.mean()), "gap": gap,
            "closed": (float(cascade.mean() - base.mean()) / gap) if gap > 0 else None,
            "cascade_minus_base": {"mean": mean, "lo": lo, "hi": hi},
            "escalated": float(np.mean([r["escalated"] for r in rows])),
            "cost_ratio": float(np.mean([r["cost_ratio"] for r in rows])), "seeds": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", type=Path, nargs="*",
                    help="table directories (default: every finished one in benchmarks/tables)")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--depth", type=int, nargs="+", default=[1, 2, 3],
                    help="most fallback links after the base")
    ap.add_argument("--split", type=float, nargs=3, default=[0.2, 0.3, 0.5])
    add_json_option(ap)
    args = ap.parse_args()
    out = {"tables": {}}
    print(f"{'table':<22}{'depth':>6}{'base':>8}{'cascade':>8}{'oracle':>8}{'closed':>8}"
          f"{'escal.':>8}{'cost x':>8}  cascade - base [95%]")
    for directory in args.tables or find_tables():
        r = probe(directory, list(range(args.seeds)), args.split, args.depth)
        name = Path(directory).name
        out["tables"][name] = r
        if "skipped" in r:
            print(f"{name:<22}  skipped: {r['skipped']}")
            continue
        for depth, d in r["depths"].items():
            ci = d["cascade_minus_base"]
            closed = "-" if d["closed"] is None else f"{d['closed']:+.2f}"
            print(f"{name:<22}{depth:>6}{d['base_test']:>8.3f}{d['cascade_test']:>8.3f}"
                  f"{d['oracle_test']:>8.3f}{closed:>8}{d['escalated']:>8.2f}"
                  f"{d['cost_ratio']:>8.2f}  {ci['mean']:+.3f} [{ci['lo']:+.3f}, {ci['hi']:+.3f}]")
    if args.json:
        write_result(args.json, out, indent=1)


if __name__ == "__main__":
    main()
