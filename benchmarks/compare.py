"""coalign vs unoptimized, random search, REINFORCE and DSPy at a matched budget (equivalent runs).

Systems: ``multihop_qa`` on HotpotQA and ``pubmedqa_select`` (per-question model choice between
SmolLM2-135M and Qwen2.5-0.5B, plus prompts) on PubMedQA, both on the local LLMs. coalign runs
first; random search and global-reward REINFORCE then get the same number of equivalent runs.
Every difference to the unoptimized system comes with a paired bootstrap 95% interval over test
questions. Runs live in ``--run-dir`` with the response cache, so an interrupted benchmark
resumes; each finished row (per-question test scores included) also goes to a results file under
``benchmarks/results/compare/``, so later sessions measure the remaining methods (``--methods``)
against it on a fresh machine. With the benchmark extra installed, DSPy's MIPROv2 and GEPA get
the same budget too (``--no-dspy`` skips them).

    python -m benchmarks.compare [--quick] [--json PATH] [--run-dir DIR] [--seeds 0 1 ...]
        [--methods coalign random_search ...] [--status]
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from benchmarks._results import add_json_option, write_result
from benchmarks.compare_rows import (
    RESULTS_DIR,
    SavedRows,
    diff,
    finished,
    merge_seeds,
    progress,
    progress_line,
    row_line,
    stored_row,
    versus_line,
    with_differences,
)
from coalign.data import split as split_examples
from coalign.job import Job, RunConfig, parse_run_config
from coalign.optimize import random_search, reinforce_search
from coalign.runner import evaluate, load_dataset
from coalign.store import RunStore
from coalign.systems import SYSTEMS as SYSTEM_FACTORIES

SYSTEMS = {"multihop_qa": "hotpotqa", "pubmedqa_select": "pubmedqa"}
# --quick tunes only each system's last LLM step: its rollouts need no downstream LLM call
QUICK_COMPONENTS = {"multihop_qa": ["answer_generator"], "pubmedqa_select": ["answerer"]}
HAS_DSPY = importlib.util.find_spec("dspy") is not None
# HotpotQA: a step accepted by the strict gate on 24 val questions (0.258 -> 0.314) lost F1 on
# test (-0.047 [-0.093, -0.001], 124 paired questions; most questions do not change, so 24 see
# too few of the changed ones). 100 val questions and the bootstrap gate guard against that;
# early rejection keeps the larger split's cost for the many rejected candidates down.
# PubMedQA with 24 val questions: the gate accepted a step that held on test (0.07 -> 0.58),
# but rejected "always Qwen" at val 0.417 vs 0.500 although it scored 0.590 vs 0.580 on test,
# and random search picked its best of 23 configs on those 24 questions. Both get 100 now.
# HotpotQA with 100 val questions: three extractor instructions the 0.5B model follows gained on
# validation and lost on test: +0.004 / +0.017 / +0.038 (P(better) 0.96, accepted) on val,
# -0.041 / -0.029 / -0.018 on the 200 test questions. The extractor's answer flips with small
# changes of what it reads, so most questions move at random, and a loop that validates several
# candidates on one val set lets a lucky one through. 200 val questions and a 0.95 gate; the
# larger val draws another train and test (the split is cut from one shuffled prefix).
FULL_SPLIT = {"multihop_qa": {"train": 24, "val": 200, "test": 200},
              "pubmedqa_select": {"train": 24, "val": 100, "test": 200}}
FULL_GATE = {"multihop_qa": {"gate": "bootstrap", "gate_confidence": 0.95, "early_reject": 0.9},
             "pubmedqa_select": {"gate": "bootstrap", "early_reject": 0.9}}
METHODS = ("coalign", "random_search", "reinforce", "dspy_mipro", "dspy_gepa")
PROPOSER_CTX = 8192  # DSPy's proposal/reflection prompts carry raw demos: 2k tokens overflow


def run_config(name: str, quick: bool, seed: int) -> RunConfig:
    # --quick checks that every method runs end to end (HotpotQA extractor calls take ~5-7 s on
    # 2 cores); its numbers mean nothing statistically.
    split = {"train": 3, "val": 3, "test": 4} if quick else FULL_SPLIT[name]
    budget = ({"iterations": 2, "search_size": 2, "fresh_inputs": 2, "rollout_n": 2,
               "text_candidates": 2, "text_steps": 1} if quick
              else {"iterations": 8, "search_size": 6, "fresh_inputs": 4, "rollout_n": 3,
                    "text_alternatives": 3})
    raw = {"system": name, "data": SYSTEMS[name], "split": {**split, "seed": seed},
           "budget": budget, "seed": seed, "proposer": "qwen2.5-0.5b",
           **({} if quick else FULL_GATE.get(name, {}))}
    return parse_run_config({**raw, "components": QUICK_COMPONENTS[name]} if quick else raw)


def system_dir(run_dir: Path, name: str, seed: int, cfg: RunConfig) -> Path:
    # one directory per config: a changed budget or split starts afresh instead of being refused
    return run_dir / f"{name}-seed{seed}-{cfg.digest[:8]}"


def run_system(name: str, quick: bool, seed: int, run_dir: Path, use_dspy: bool = False,
               methods: tuple[str, ...] = METHODS, results: Path | None = None) -> dict:
    """The rows of ``methods`` for one system and seed (rows finished earlier, in the run dir
    or the results file, are reused); baselines get coalign's equivalent runs as budget."""
    cfg = run_config(name, quick, seed)
    where = system_dir(run_dir, name, seed, cfg)
    job, saved = Job.open(cfg, where), SavedRows(results, where.name)
    opt, out = job.optimizer, {}
    rt = opt.runtime_for({})

    def measure(method: str, run) -> None:
        row = (finished(job.store, saved, method, run) if method in methods
               else stored_row(job.store, saved, method))
        if row is not None:
            out[method] = row

    def unoptimized() -> dict:
        base = evaluate(job.task, job.test, job.task.system.default_config(), rt, job.store,
                        tag="test")
        return {"test_metric": base.mean_reward, "equiv_runs": 0.0, "llm_calls": 0,
                "scores": base.scores}

    def coalign_row() -> dict:
        # a resumed loop's wall time leaves out the part done before the interruption
        resumed = bool(job.store.get_meta("stage1_done") or job.store.steps())
        opt.run()
        _, tuned = job.evaluate_test()
        steps = job.steps_on_test()
        return {"test_metric": tuned.mean_reward, "equiv_runs": opt.ledger().total_runs,
                "llm_calls": requests(opt.account.total_usage()), "accepted_steps": len(steps),
                "steps_holding_on_test": sum(r["holds"] for r in steps), "steps": steps,
                "resumed": resumed, "scores": tuned.scores}

    out["unoptimized"] = finished(job.store, saved, "unoptimized", unoptimized)
    measure("coalign", coalign_row)
    if "coalign" not in out:
        raise SystemExit(f"{where.name}: the baselines' budget is coalign's equivalent runs, and "
                         "coalign has no row yet: run --methods coalign first")
    budget = out["coalign"]["equiv_runs"]

    def baseline_row(search) -> dict:
        res = search()
        result = evaluate(job.task, job.test, res.best, rt, job.store, tag="test")
        return {"test_metric": result.mean_reward, "equiv_runs": res.equiv_runs,
                "llm_calls": requests(res.account.total_usage()), "configs_tried": len(res.tried),
                "scores": result.scores}

    measure("random_search", lambda: baseline_row(
        lambda: random_search(job.task, job.val, rt, budget, seed=seed,
                              components=cfg.components,
                              on_trial=progress(job.store, "random_search", budget))))
    measure("reinforce", lambda: baseline_row(
        lambda: reinforce_search(job.task, job.train, job.val, rt, budget, seed=seed,
                                 components=cfg.components,
                                 on_trial=progress(job.store, "reinforce", budget))))
    if use_dspy:
        for method in ("dspy_mipro", "dspy_gepa"):
            measure(method, lambda m=method: dspy_row(
                m.removeprefix("dspy_"), job.task, (job.train, job.val, job.test), rt, job.store,
                budget, seed, dspy_proposer(job)))
    return with_differences(out, seed)


def unoptimized_row(store: RunStore, name: str, cfg: RunConfig) -> dict | None:
    """The unoptimized system's row from its stored test traces (None until all are in)."""
    s = cfg.split
    examples = load_dataset(cfg.data, s.train + s.val + s.test, cfg.seed)
    test = split_examples(examples, [s.train, s.val, s.test], seed=s.seed)[2]
    digest = SYSTEM_FACTORIES[name](cfg.model).system.default_config().digest
    traces = [store.get_trace("test", e.id, digest) for e in test]
    if any(t is None for t in traces):
        return None
    scores = [t.reward or 0.0 for t in traces if t is not None]
    return {"test_metric": sum(scores) / len(scores), "equiv_runs": 0.0, "llm_calls": 0,
            "wall_s": 0.0, "scores": scores}


def status(args: argparse.Namespace, run_dir: Path, results: Path | None = None) -> dict:
    """What each system's run dir and results file hold so far: the loop's progress and the
    finished rows, printed and returned in ``--json``'s shape (a method averaged over the seeds
    that have it; ``complete`` says whether every method of every seed has finished). Rows only
    a run dir holds are copied into the results file; nothing is run."""
    found: dict = {"systems": {}, "complete": {}}
    for name in args.systems:
        per_seed = []
        for seed in args.seeds:
            cfg = run_config(name, args.quick, seed)
            where = system_dir(run_dir, name, seed, cfg)
            rows = seed_status(name, cfg, where, SavedRows(results, where.name))
            for method, row in rows.items():  # the comparison that matters, as soon as it exists
                if method not in ("unoptimized", "coalign") and "scores" in row \
                        and "scores" in rows.get("coalign", {}):
                    print(versus_line(method, diff(rows["coalign"]["scores"], row["scores"],
                                                   seed)))
            if "unoptimized" in rows and "coalign" in rows:
                per_seed.append(with_differences(rows, seed))
        found["systems"][name] = merge_seeds(per_seed)
        wanted = METHODS if getattr(args, "dspy", HAS_DSPY) else METHODS[:3]
        found["complete"][name] = len(per_seed) == len(args.seeds) and all(
            m in rows for rows in per_seed for m in wanted)
    return found


def seed_status(name: str, cfg: RunConfig, where: Path, saved: SavedRows) -> dict:
    """Print and return one system/seed's finished rows (run dir first, then results file)."""
    if (where / "run.sqlite").exists():
        store = RunStore(where, readonly=True)  # a status beside a running benchmark
        steps = store.steps()
        print(f"{where}: stage 1 {'done' if store.get_meta('stage1_done') else 'not done'}, "
              f"{len(steps)}/{cfg.budget.iterations} iterations, "
              f"{sum(state == 'accepted' for _, state, _ in steps)} accepted")
        rows = {m: r for m in ("unoptimized", *METHODS)
                if (r := stored_row(store, saved, m)) is not None}
        if "unoptimized" not in rows and (base := unoptimized_row(store, name, cfg)):
            saved.put("unoptimized", base)  # a run dir from before that row: to the results
            rows = {"unoptimized": base, **rows}
        running = {m: p for m in METHODS
                   if m not in rows and (p := store.get_meta(f"progress:{m}")) is not None}
        store.close()
    else:
        rows, running = saved.rows(), {}
        print(f"{where}: no run dir" + (f"; {len(rows)} rows in {saved.path}" if rows else ""))
    for method, row in rows.items():
        print(f"  {row_line(method, row)}")
    for method, p in running.items():
        print(progress_line(method, p))
    return rows


def requests(usage) -> int:
    """LLM requests a method made, whether the model or the shared response cache answered:
    the cache is shared between methods, so counting only model calls would favour later ones."""
    return usage.calls + usage.cache_hits


def dspy_proposer(job: Job):
    """The job's proposer model for DSPy: a local one gets a long context (same weights), behind
    the job's response cache; an endpoint model is used as the runtime has it."""
    from coalign.lm import CachedLM, make_lm
    from coalign.runner import CACHE_NAME

    name = job.cfg.proposer or job.cfg.model
    if ":" in name and not name.startswith("llamacpp:"):
        return name
    spec = name if ":" in name else f"llamacpp:{name}"
    return CachedLM(make_lm(spec, n_ctx=PROPOSER_CTX), job.store.run_dir / CACHE_NAME)


def dspy_row(method: str, task, splits, runtime, store, budget: float, seed: int,
             prompt_model=None) -> dict:
    """DSPy's ``method`` ("mipro" or "gepa") given ``budget`` equivalent runs on the same
    train/val/test split, runtime (model, response cache) and test runner as the other methods;
    same row keys."""
    from coalign.errors import ConfigError
    from coalign.optimize import dspy_optimize

    train, val, test = splits
    try:
        res = dspy_optimize(task, train, val, runtime, budget, method=method, seed=seed,
                            prompt_model=prompt_model)
    except ConfigError as exc:  # e.g. a budget below one MIPRO trial: no matched run exists
        print(f"dspy_{method}: skipped: {exc}")
        return {"test_metric": float("nan"), "equiv_runs": 0.0, "llm_calls": 0,
                "wall_s": 0.0, "skipped": str(exc)}
    tested = evaluate(task, test, res.best, runtime, store, tag="test")
    return {"test_metric": tested.mean_reward, "equiv_runs": res.equiv_runs,
            "llm_calls": requests(res.account.total_usage()), "budget_runs": budget,
            "val_score": res.best_score, "configs_tried": len(res.tried), "plan": res.plan,
            "scores": tested.scores}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    add_json_option(parser)
    parser.add_argument("--run-dir", type=Path, default=Path("runs/compare"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS))
    parser.add_argument("--dspy", action=argparse.BooleanOptionalAction, default=HAS_DSPY,
                        help="also run DSPy MIPROv2 and GEPA (default: on when dspy is installed)")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS),
                        help="measure only these (the others' finished rows are still shown); "
                             "baselines need coalign's row, their budget")
    parser.add_argument("--results", type=Path, default=None,
                        help="where finished rows are kept for later sessions (default: "
                             "benchmarks/results/compare for full runs; none for --quick)")
    parser.add_argument("--status", action="store_true",
                        help="print what the run dirs and results files hold so far (rows, "
                             "loop progress); run nothing")
    args = parser.parse_args()
    run_dir = args.run_dir / ("quick" if args.quick else "full")
    results_dir = args.results or (None if args.quick else RESULTS_DIR)
    if args.status:
        found = status(args, run_dir, results_dir)
        if args.json:  # the rows finished so far, in the same shape
            write_result(args.json, found)
        return
    if args.dspy and not HAS_DSPY:
        parser.error("--dspy needs the benchmark extra: pip install 'coalign[bench]'")
    results: dict = {"systems": {}}
    for name in args.systems:
        per_seed = [run_system(name, args.quick, s, run_dir, args.dspy, tuple(args.methods),
                               results_dir) for s in args.seeds]
        merged = merge_seeds(per_seed)
        results["systems"][name] = merged
        print(f"\n{name} ({SYSTEMS[name]}), seeds {args.seeds}")
        print(f"{'method':<15} {'test':>7} {'Δ vs unopt [95% CI]':>26} {'equiv runs':>10} "
              f"{'LLM calls':>9} {'wall s':>7}")
        for method, m in merged.items():
            diff = m["per_seed"][0].get("diff_vs_unoptimized")
            d = (f"{diff['mean']:+.3f} [{diff['ci95'][0]:+.3f}, {diff['ci95'][1]:+.3f}]"
                 if diff else "")
            print(f"{method:<15} {m['test_metric']:>7.3f} {d:>26} {m['equiv_runs']:>10.1f} "
                  f"{m['llm_calls']:>9.0f} {m['wall_s']:>7.0f}")
        for seed, row in zip(args.seeds, merged["coalign"]["per_seed"], strict=True):
            print(f"coalign seed {seed}: {row.get('accepted_steps')} accepted steps, "
                  f"{row.get('steps_holding_on_test')} of them hold on test")
            for method, d in row.get("diff_vs", {}).items():
                print(versus_line(method, d))
    if args.json:
        write_result(args.json, results)


if __name__ == "__main__":
    main()
