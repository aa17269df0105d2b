"""Optimizers compared on replay tables over many seeds at matched budgets (no LLM call).

For each table: every config's reward on every finished question (replay), then per seed a
train / val / test split of those questions, each method run at each budget (equivalent
full-system runs), and the config it returns scored on the seed's test questions. Prints, per
budget, each method's mean test metric with a 95% bootstrap interval over seeds and the paired
difference of the best two methods; writes the JSON and an anytime-curve SVG per table.

    python -m benchmarks.replay_compare [TABLE ...] [--seeds 20] [--first-seed 0]
        [--budgets 250 500 1000 2000] [--split 0.2 0.3 0.5] [--workers 2]
        [--json benchmarks/results/replay/compare.json]
        [--svg-dir benchmarks/results/replay] [--per-instance [COMPONENT.PARAM ...]]
        [--cost-cap FRACTION] [--proposals local|portfolio] [--terminal-reward exact|learned]

Without TABLE: every finished table under ``benchmarks/tables``. Per table, a second coalign
row has the space's Choice params chosen per input (run config ``per_instance``; by default
every Choice param the table varies, ``--per-instance`` alone for none, or the ones named);
the script reports the per-input oracle over them from the best global config on test, and
how much of its gap over that config each coalign row closes. Seeds run in ``--workers``
processes; a seed's figures do not depend on the worker count.

On a space with model slots (``<component>.model``) the model-choice baselines join
(always the strongest / the cheapest model, LLMSelector's greedy allocation, NSGA-II), every
row shows the test cost per query (model seconds) of what it returned, and a front SVG draws
quality against cost. ``--cost-cap F``: quality under a cap of F times the cost per query of
the all-strongest config (0.5: half of it); a method returns its best config on validation
within the cap, and coalign's gate refuses a step over it (run config ``cost_cap``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._results import add_json_option, head_commit, write_result
from coalign.compare import (
    CMAES_WEIGHTS,
    CMAES_WEIGHTS_ONLY,
    METHODS,
    MODEL_METHODS,
    REFERENCES,
    REINFORCE_WEIGHTS,
    START,
    TPE_WEIGHTS,
    Lookup,
    anytime_svg,
    coalign_method,
    compare,
    draw_split,
    front,
    front_svg,
    mipro_method,
    model_slots,
    per_input_oracle,
    split_sizes,
    weights_methods,
)
from coalign.errors import ConfigError
from coalign.params import Choice
from coalign.tables import CandidateSpace, Table, find_tables

PER_INSTANCE = "coalign (per-instance choices)"
WARM = "coalign (warm start)"
MIPRO = "dspy miprov2"


def per_instance_gap(lookup: Lookup, result, sizes, slots: list[str]) -> dict:
    """Per seed, the per-input oracle over ``slots`` from the best global config on test; per
    budget, the share of its gap over that config each coalign variant closes (mean over
    seeds of (variant - best global) / (oracle - best global))."""
    oracle, best = [], []
    for seed in result.seeds:
        split = draw_split(lookup.scores.shape[1], sizes, seed)
        top = int(np.argmax(lookup.scores[:, list(split.test)].mean(axis=1)))
        best.append(lookup.score(top, split.test))
        oracle.append(per_input_oracle(lookup, top, slots, split.test))
    gap = float(np.mean(oracle) - np.mean(best))
    print(f"per-input oracle over {slots}: {np.mean(oracle):.3f} against the best global "
          f"config on test {np.mean(best):.3f} (gap {gap:+.3f})")
    closed = {}
    for variant in ("coalign", PER_INSTANCE):
        closed[variant] = {str(b): (float(np.mean(result.scores[variant][b])) - np.mean(best))
                           / gap if gap > 0 else None for b in result.budgets}
        shares = zip(result.budgets, closed[variant].values(), strict=True)
        print(f"  {variant}: share of the gap closed by budget " + ", ".join(
            f"{b:g}: {v:+.2f}" for b, v in shares if v is not None))
    return {"slots": slots, "oracle": oracle, "best_global_test": best, "gap": gap,
            "closed": closed}


def choice_slots(space: CandidateSpace) -> list[str]:
    """The table's varied params that are Choices (a retriever's k, a query source): the ones a
    run config's ``per_instance`` can choose per input."""
    system = space.task().system
    out = []
    for slot in space.params:
        component, _, param = slot.partition(".")
        if isinstance(system.component(component).params.get(param), Choice):
            out.append(slot)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", type=Path, nargs="*",
                    help="table directories (default: every finished one in benchmarks/tables)")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="seeds FIRST .. FIRST+SEEDS-1: more seeds for a committed file, "
                         "paired with it by benchmarks.paired_rows A.json+B.json")
    ap.add_argument("--budgets", type=float, nargs="+", default=[250, 500, 1000, 2000])
    ap.add_argument("--split", type=float, nargs=3, default=[0.2, 0.3, 0.5],
                    help="train / val / test fractions of the finished questions")
    ap.add_argument("--level", default="greedy")
    ap.add_argument("--methods", nargs="+",
                    default=["coalign", *METHODS, *MODEL_METHODS, TPE_WEIGHTS, CMAES_WEIGHTS,
                             CMAES_WEIGHTS_ONLY, REINFORCE_WEIGHTS],
                    help=f"of: coalign, {', '.join([*METHODS, *MODEL_METHODS])}, "
                         f"{TPE_WEIGHTS!r}, {CMAES_WEIGHTS!r}, {CMAES_WEIGHTS_ONLY!r}, "
                         f"{REINFORCE_WEIGHTS!r}, "
                         f"{MIPRO!r} (model-choice "
                         "baselines only on spaces with model slots, weights searches only on "
                         "a system with a decider; MIPROv2 only when named: it runs the system "
                         "per trial)")
    ap.add_argument("--cost-cap", type=float, default=None, metavar="FRACTION",
                    help="quality under a cost cap: FRACTION of the all-strongest config's "
                         "cost per query")
    ap.add_argument("--per-instance", nargs="*", default=None, metavar="COMPONENT.PARAM",
                    help="default: every Choice param of the table's space; alone: none")
    ap.add_argument("--warm-start", type=float, default=None, metavar="RUNS",
                    help=f"add {WARM!r}: the loop after a global TPE search of RUNS runs "
                         "(budget.warm_start)")
    ap.add_argument("--proposals", choices=["local", "portfolio"], default=None,
                    help="the coalign rows' budget.proposals (default: the run config's)")
    ap.add_argument("--terminal-reward", choices=["exact", "learned"], default=None,
                    help="the coalign rows' budget.terminal_reward (default: the run config's)")
    ap.add_argument("--workers", type=int, default=2, help="processes running seeds")
    ap.add_argument("--quick", action="store_true", help="3 seeds")
    add_json_option(ap)
    ap.add_argument("--svg-dir", type=Path)
    args = ap.parse_args()
    seeds = list(range(args.first_seed, args.first_seed + (3 if args.quick else args.seeds)))
    commit = head_commit()  # the code that runs, not HEAD when it ends
    results: dict = {"tables": {}}
    for directory in args.tables or find_tables(complete=args.level):
        table = Table(directory)
        per_instance = (choice_slots(table.space) if args.per_instance is None
                        else args.per_instance)
        t0 = time.perf_counter()
        rewards = table.rewards(args.level)
        replay_s = time.perf_counter() - t0
        lookup = Lookup.of_table(rewards, table.space)
        has_models = bool(model_slots(lookup))
        if args.cost_cap is not None:
            if not has_models:
                sys.exit(f"error: --cost-cap: {directory} has no model slots to cap")
            lookup = lookup.with_cap(lookup.cap_of(args.cost_cap))
        settings = {} if lookup.cap is None else {"cost_cap": lookup.cap}
        budget = {k: v for k, v in (("proposals", args.proposals),
                                    ("terminal_reward", args.terminal_reward)) if v}
        if budget:
            settings["budget"] = budget
        sizes = split_sizes(len(rewards.questions), args.split)
        available = {**METHODS, **(MODEL_METHODS if has_models else {}),
                     **weights_methods(directory)}
        methods = {m: available[m] for m in args.methods if m in available}
        if "coalign" in args.methods:
            finished = len(rewards.questions) == len(table.space.questions)
            if finished:
                methods = {"coalign": (coalign_method(directory, rewards.questions,
                                                      settings=settings), True), **methods}
                if per_instance:
                    methods[PER_INSTANCE] = (coalign_method(
                        directory, rewards.questions,
                        settings={**settings, "per_instance": per_instance}), True)
                if args.warm_start:
                    methods[WARM] = (coalign_method(
                        directory, rewards.questions,
                        settings={**settings, "budget": {**settings.get("budget", {}),
                                                         "warm_start": args.warm_start}}),
                        True)
            else:
                print(f"{directory}: coalign left out, the table is not finished "
                      f"({len(rewards.questions)} of {len(table.space.questions)} questions)")
        if MIPRO in args.methods:  # named only: it runs the system per trial
            try:
                mipro = mipro_method(directory, rewards.questions)
                methods[MIPRO] = (mipro, mipro.anytime(sizes[1]))
            except ConfigError as exc:
                print(f"{directory}: {MIPRO} left out: {exc}")
        result = compare(lookup, sizes=sizes, seeds=seeds, budgets=args.budgets,
                         methods=methods, workers=args.workers)
        metric = table.space.task().metric_name
        # keyed by directory: two tables of one system (a rebuild, a wider space) both keep theirs
        name = Path(directory).name
        print(f"\n{name} ({table.space.system}): {len(rewards.questions)} questions, "
              f"{lookup.n_configs} configs, "
              f"split {sizes}, {len(seeds)} seeds (replay {replay_s:.0f} s); exhaustive search "
              f"costs {result.exhaustive_cost:.0f} runs"
              + ("" if lookup.cap is None else
                 f"; cost cap {lookup.cap:.2f} s per query ({args.cost_cap:g} x all-strongest)"))
        for m, stats in result.stats.items():  # what a run did, mean over seeds
            print(f"  {m} run at {max(args.budgets):g}: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in stats.items()))
        competitors = list(methods)
        out = {"questions": len(rewards.questions), "configs": lookup.n_configs,
               "metric": metric, "replay_s": replay_s, **result.to_json(), "paired": {}}
        for b in result.budgets:
            print(f"budget {b:g} runs")
            for m in result.scores:
                s = result.summary(m, b)
                tag = "  (reference)" if m in REFERENCES else ""
                cost = f"  {result.mean_cost(m, b):6.2f} s/query" if has_models else ""
                print(f"  {m:<34} {s['mean']:.3f} [{s['lo']:.3f}, {s['hi']:.3f}]{cost}{tag}")
            ranked = sorted(competitors, key=lambda m: -result.summary(m, b)["mean"])
            if len(ranked) > 1:  # --methods may name one method alone
                d = result.paired(ranked[0], ranked[1], b)
                out["paired"][str(b)] = {"a": ranked[0], "b": ranked[1], **d}
                print(f"  {ranked[0]} - {ranked[1]}: {d['mean']:+.3f} [{d['lo']:+.3f}, "
                      f"{d['hi']:+.3f}] P {d['p_better']:.2f}")
            # the question: coalign - the best baseline (and the same for the warm arm)
            best = result.best_baseline(b)
            for arm, suffix in (("coalign", ""), (WARM, "_warm")):
                if arm not in competitors:
                    continue
                if best is not None:
                    d = result.paired(arm, best, b)
                    out.setdefault(f"coalign{suffix}_vs_best", {})[str(b)] = {"best": best,
                                                                               **d}
                    print(f"  {arm} - {best} (best baseline): {d['mean']:+.3f} "
                          f"[{d['lo']:+.3f}, {d['hi']:+.3f}] P {d['p_better']:.2f}")
                d = result.paired(arm, START, b)
                out.setdefault(f"coalign{suffix}_vs_start", {})[str(b)] = d
                print(f"  {arm} - start config: {d['mean']:+.3f} "
                      f"[{d['lo']:+.3f}, {d['hi']:+.3f}]")
        if PER_INSTANCE in result.scores:
            out["per_instance"] = per_instance_gap(lookup, result, sizes, per_instance)
        suffix = "" if args.cost_cap is None else f"-cap{args.cost_cap:g}"
        everything = list(range(len(rewards.questions)))
        true_front = [(p.cost, p.quality_score)
                      for p in front(lookup, range(lookup.n_configs), everything)]
        if has_models:
            out["true_front"] = [{"config": p.config, "cost_per_query": p.cost,
                                  "quality": p.quality_score}
                                 for p in front(lookup, range(lookup.n_configs), everything)]
        results["tables"][name + suffix] = out
        if args.svg_dir:
            args.svg_dir.mkdir(parents=True, exist_ok=True)
            path = args.svg_dir / f"anytime-{name}{suffix}.svg"
            path.write_text(anytime_svg(result, metric=metric,
                                        title=f"{name}: test {metric} by budget, "
                                              f"{len(seeds)} seeds"))
            out["svg"] = str(path)
            if has_models:
                path = args.svg_dir / f"front-{name}{suffix}.svg"
                path.write_text(front_svg(result, true_front, metric=metric,
                                          title=f"{name}: test {metric} against cost per "
                                                f"query, {len(seeds)} seeds"))
                out["front_svg"] = str(path)
    if args.json:
        write_result(args.json, results, commit=commit)


if __name__ == "__main__":
    main()
