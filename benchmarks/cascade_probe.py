"""A per-input cascade over Choice values, gated by the output's gold-free checks, on replay.

``router_probe`` showed that which Choice value wins a question cannot be read off the
question's text. A cascade (``coalign.cascade``) reads the *output*: the answering config runs,
and where the system's output fails the checks its last component declares (code: the task's
example test), the next config of a chain runs; the first output that passes answers. Cost is
counted in full: every config run on a question adds its model seconds.

Two modes, 20 seeds each (the split of ``replay_compare``):

* default, **the probe**: the answering config is the best on validation, and the chain is
  fitted among the configs that differ from it only in the Choice slots (what a per-input
  policy may vary), each known on every train and validation question (kinder than a run,
  which pays for what it sees; as ``router_probe`` is). Beside it, ``gold``: the same probe
  with a gold-informed check (the reward is at least 0.5): the share a cascade could close
  with exact checks, what the real checks' imprecision costs.
* ``--runs N``, **the run**: the loop (``coalign_method``, ``--proposals``) runs N equivalent
  runs; ``Job.fit_cascade`` fits the chain on the validation traces of the configs it validated
  in full, and ``Job.cascade_on_test`` runs it on the test questions from the table.

Both print the answering config, the cascade and the per-input oracle (over the Choice slots,
from the answering config) on test, the share of the oracle's gap closed, the share of test
questions escalated, the cost against the answering config's, and the paired cascade - single
interval over seeds; ``--json`` writes them with the per-seed figures. The cost counts each
fallback's whole run; the run mode adds ``rerun cost x``: a fallback paying only the
components its config changes and those downstream (``System.run_from`` on the answer's trace).

    python -m benchmarks.cascade_probe [TABLE ...] [--seeds 20] [--depth 1 2 3] \
        [--runs 1000 --proposals portfolio] [--json benchmarks/results/replay/cascade_probe.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._replay import add_split_option
from benchmarks._results import add_json_option, write_result
from benchmarks.replay_compare import choice_slots
from benchmarks.router_probe import siblings
from coalign.cascade import answers, fit_chain, output_checks, passes
from coalign.compare import Lookup, Split, coalign_method, draw_split, split_sizes
from coalign.stats import paired_bootstrap
from coalign.tables import Rewards, Table, config_indices, find_tables

GOLD_PASS = 0.5  # the "gold" variant's check: reward at or above this passes


def checks_matrix(table: Table, rewards: Rewards) -> np.ndarray:
    """``passed[config, question]``: whether the system's output passes its checks, in
    ``rewards``' order (one replay of every config; each distinct output checked once)."""
    from coalign.pairs import canonical_json
    from coalign.runner import evaluate

    task = table.space.task()
    by_id = {e.id: e for e in table.finished()}
    examples = [by_id[q] for q in rewards.questions]
    runtime = table.runtime(max_workers=2)
    memo: dict[str, bool] = {}
    out = np.zeros(rewards.scores.shape, dtype=bool)
    for i, config in enumerate(rewards.configs):
        for j, trace in enumerate(evaluate(task, examples, config, runtime).traces):
            key = canonical_json([trace.inputs, trace.state.get(task.system.output)])
            if key not in memo:
                memo[key] = passes(task, trace)
            out[i, j] = memo[key]
    return out


def probe_seed(lookup: Lookup, passed: np.ndarray, costs: np.ndarray, slots: list[str],
               split: Split, depth: int) -> dict:
    """The probe's figures for one seed: the chain fitted among the best validation config's
    Choice siblings on the train and validation questions."""
    configs = siblings(lookup, int(np.argmax(lookup.scores[:, list(split.val)].mean(axis=1))),
                       slots)
    fit, test = [*split.train, *split.val], list(split.test)
    chain = fit_chain(lookup.scores[configs][:, fit], passed[configs][:, fit], depth)
    rows = [configs[c] for c in chain]
    answer, ran = answers(list(range(len(rows))), passed[rows][:, test])
    spent = [costs[rows[:r], q].sum() for r, q in zip(ran, test, strict=True)]
    return {"chain": rows, "single_test": lookup.score(configs[0], test),
            "cascade_test": float(lookup.scores[np.array(rows)[answer], test].mean()),
            "oracle_test": float(lookup.scores[configs][:, test].max(axis=0).mean()),
            "escalated": float(np.mean(ran > 1)),
            "cost_ratio": float(np.mean(spent) / max(costs[configs[0], test].mean(), 1e-9))}


def run_seed(directory: Path, table: Table, lookup: Lookup, slots: list[str], split: Split,
             seed: int, runs: float, depths: list[int], settings: dict[str, Any]
             ) -> dict[str, dict[int, dict]]:
    """The run's figures for one seed, per variant and depth: the loop to ``runs``, then its
    own cascades on test, fallbacks among its validated configs that differ from its answer in
    the Choice slots alone (``choice``: a per-input policy, against the oracle over those
    slots) or in anything (``any``; its oracle is the per-input best of every candidate)."""
    method = coalign_method(directory, table.space.questions, settings=settings)
    out: dict[str, dict[int, dict]] = {"choice": {}, "any": {}}

    def after(job: Any) -> None:
        single = job.on_test(job.optimizer.config, {})
        test = list(split.test)
        for variant, vary in (("choice", slots), ("any", None)):
            for depth in depths:
                fit = job.fit_cascade(depth, vary)
                res = job.cascade_on_test(fit.cascade)
                rows = [_index(lookup, c, table) for c in fit.cascade.configs]
                pool = (siblings(lookup, rows[0], slots) if vary is not None else
                        [_index(lookup, c, table) for c in _candidates(job)])
                out[variant][depth] = {
                    "chain": rows, "candidates": fit.candidates, "val_single": fit.val_single,
                    "val_cascade": fit.val_cascade, "single_test": single.mean_reward,
                    "cascade_test": res.result.mean_reward,
                    "oracle_test": float(lookup.scores[pool][:, test].max(axis=0).mean()),
                    "escalated": res.escalated,
                    "cost_ratio": res.cost_per_query_s / max(single.cost_per_query_s, 1e-9),
                    "rerun_cost_ratio": (res.rerun_cost_per_query_s
                                         / max(single.cost_per_query_s, 1e-9))}

    sizes = (len(split.train), len(split.val), len(split.test))
    method.drive(sizes, seed, runs, lambda *a: None, after=after)
    return out


def _candidates(job: Any) -> list[Any]:
    """The run's validated configs with traces on every validation input (the answer first):
    those its cascade is fitted among."""
    from coalign.cascade import validated_configs, validated_rows

    return validated_rows(job.store, job.optimizer.config,
                          validated_configs(job.task, job.store))[0]


def _index(lookup: Lookup, config: Any, table: Table) -> int:
    picks = config_indices(config.to_json(), table.space)
    return lookup.config([picks[s] for s in lookup.slots])


def summarize(rows: list[dict]) -> dict:
    single, cascade, oracle = (np.array([r[k] for r in rows])
                               for k in ("single_test", "cascade_test", "oracle_test"))
    gap = float(oracle.mean() - single.mean())
    mean, lo, hi, _ = paired_bootstrap(cascade.tolist(), single.tolist(), seed=0)
    return {"single_test": float(single.mean()), "cascade_test": float(cascade.mean()),
            "oracle_test": float(oracle.mean()), "gap": gap,
            "closed": (float(cascade.mean() - single.mean()) / gap) if gap > 0 else None,
            "cascade_minus_single": {"mean": mean, "lo": lo, "hi": hi},
            "escalated": float(np.mean([r["escalated"] for r in rows])),
            "cost_ratio": float(np.mean([r["cost_ratio"] for r in rows])),
            # the run mode's: a fallback paying only what its config changes (run_from)
            "rerun_cost_ratio": (float(np.mean([r["rerun_cost_ratio"] for r in rows]))
                                 if all("rerun_cost_ratio" in r for r in rows) else None),
            "seeds": rows}


def measure(directory: Path, seeds: list[int], fractions: list[float], depths: list[int],
            runs: float | None, settings: dict[str, Any]) -> dict:
    """Per depth, the figures of every seed and their summary (the probe, or with ``runs`` the
    loop's own cascade)."""
    table = Table(directory)
    slots = choice_slots(table.space)
    head: dict[str, Any] = {"table": str(directory), "slots": slots}
    if not slots or not output_checks(table.space.task()):
        return {**head, "skipped": "no Choice slot" if not slots else "no output check"}
    rewards = table.rewards()
    lookup = Lookup.of_table(rewards, table.space)
    n = len(rewards.questions)
    sizes = split_sizes(n, fractions)
    head.update(questions=n, split=list(sizes), runs=runs)
    # "gold": the probe with a gold-informed check (passes iff the reward is >= 0.5), the most
    # a cascade over these configs could gain with its checks made exact
    variants = ["probe", "gold"] if runs is None else ["choice", "any"]
    per: dict[str, dict[int, list[dict]]] = {v: {d: [] for d in depths} for v in variants}
    passed = checks_matrix(table, rewards) if runs is None else None
    costs = rewards.costs if rewards.costs is not None else np.zeros_like(rewards.scores)
    for seed in seeds:
        split = draw_split(n, sizes, seed)
        got = ({v: {d: probe_seed(lookup, p, costs, slots, split, d) for d in depths}
                for v, p in (("probe", passed), ("gold", lookup.scores >= GOLD_PASS))}
               if passed is not None else
               run_seed(directory, table, lookup, slots, split, seed, runs, depths, settings))
        for v in variants:
            for d in depths:
                per[v][d].append({"seed": seed, **got[v][d]})
    if passed is not None:  # how precise the checks are: the reward behind a pass and a fail
        head.update(output_pass_rate=float(passed.mean()),
                    reward_when_passing=float(rewards.scores[passed].mean()),
                    reward_when_failing=float(rewards.scores[~passed].mean()))
    return {**head, "variants": {v: {str(d): summarize(r) for d, r in per[v].items()}
                                 for v in variants}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", type=Path, nargs="*",
                    help="table directories (default: every finished one in benchmarks/tables)")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--depth", type=int, nargs="+", default=[1, 2, 3],
                    help="most fallback links after the answering config")
    ap.add_argument("--runs", type=float, default=None,
                    help="run the loop to this many equivalent runs and fit its own cascade")
    ap.add_argument("--proposals", choices=["local", "portfolio"], default=None,
                    help="with --runs: the loop's budget.proposals (default: the run config's)")
    add_split_option(ap)
    add_json_option(ap)
    args = ap.parse_args()
    settings = {"budget": {"proposals": args.proposals}} if args.proposals else {}
    out: dict[str, Any] = {"tables": {}, "runs": args.runs, "settings": settings}
    print(f"{'table':<22}{'fallbacks':>10}{'depth':>6}{'single':>8}{'cascade':>8}"
          f"{'oracle':>8}{'closed':>8}{'escal.':>8}{'cost x':>8}  cascade - single [95%]")
    for directory in args.tables or find_tables(complete="greedy"):
        r = measure(directory, list(range(args.seeds)), args.split, args.depth, args.runs,
                    settings)
        name = Path(directory).name
        out["tables"][name] = r
        if "skipped" in r:
            print(f"{name:<22}  skipped: {r['skipped']}")
            continue
        if "output_pass_rate" in r:
            print(f"{name:<22}  outputs passing the checks {r['output_pass_rate']:.2f}; mean "
                  f"reward when passing {r['reward_when_passing']:.3f}, when failing "
                  f"{r['reward_when_failing']:.3f}")
        for variant, per_depth in r["variants"].items():
            for depth, d in per_depth.items():
                ci = d["cascade_minus_single"]
                closed = "-" if d["closed"] is None else f"{d['closed']:+.2f}"
                rerun = ("" if d["rerun_cost_ratio"] is None
                         else f"  rerun cost x {d['rerun_cost_ratio']:.2f}")
                print(f"{name:<22}{variant:>10}{depth:>6}{d['single_test']:>8.3f}"
                      f"{d['cascade_test']:>8.3f}{d['oracle_test']:>8.3f}{closed:>8}"
                      f"{d['escalated']:>8.2f}{d['cost_ratio']:>8.2f}  "
                      f"{ci['mean']:+.3f} [{ci['lo']:+.3f}, {ci['hi']:+.3f}]{rerun}")
    if args.json:
        write_result(args.json, out, indent=1)


if __name__ == "__main__":
    main()
