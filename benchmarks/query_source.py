"""HotpotQA: does the retriever do better with the rewritten query or the question as asked?

Gold-paragraph recall of BM25's top k for both query sources needs no model: the rewritten
queries come from the unoptimized traces a ``compare.py`` run stored. ``--f1`` also runs the
system with the retriever searching the question (``multihop_qa(query_sources=...)``) on the
validation and test splits, reusing a copy of the run dir's response cache, and reports the
paired F1 difference to the stored unoptimized traces, also split by whether the question found
more, as many or fewer gold paragraphs than the query.

    python -m benchmarks.query_source --run-dir runs/compare/full/multihop_qa-... \
        [--quick] [--f1] [--json out.json]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._results import add_json_option, write_result
from benchmarks.compare_rows import diff
from coalign.backends import build_runtime
from coalign.component import passage_text
from coalign.data import split
from coalign.job import RunConfig
from coalign.retrieval import BM25Index
from coalign.runner import CACHE_NAME, evaluate, load_dataset
from coalign.store import RunStore
from coalign.systems import models_of, multihop_qa

KS = (1, 2, 3, 5)


def recall(examples, queries: dict[str, str]) -> dict:
    """Per source and k: mean share of gold paragraphs found, and share with all of them."""
    out: dict = {}
    for source in ("query", "question"):
        for k in KS:
            any_share = all_found = 0.0
            for e in examples:
                pars = e.inputs["paragraphs"]
                text = queries[e.id] if source == "query" else e.inputs["question"]
                found = {pars[i]["title"] for i in
                         BM25Index([passage_text(p) for p in pars]).search(text, k)}
                gold = set(e.meta["supporting_titles"])
                any_share += len(gold & found) / len(gold)
                all_found += float(gold <= found)
            out[f"{source}@{k}"] = {"gold_share": any_share / len(examples),
                                    "all_gold": all_found / len(examples)}
    return out


def by_gold(examples, old_traces, new_traces) -> dict:
    """F1 change grouped by whether the question's search found more, as many or fewer gold
    paragraphs than the query's (questions with the very same passages left out)."""
    groups: dict = {}
    for e, old, new in zip(examples, old_traces, new_traces, strict=True):
        gold = set(e.meta["supporting_titles"])
        titles = [[p["title"] for p in t.step("retriever").outputs["passages"]]
                  for t in (old, new)]
        if titles[0] == titles[1]:
            continue
        found = [len(gold & set(t)) for t in titles]
        key = "more" if found[1] > found[0] else "fewer" if found[1] < found[0] else "as many"
        groups.setdefault(key, []).append((new.reward or 0.0) - (old.reward or 0.0))
    return {k: {"questions": len(v), "mean_diff": sum(v) / len(v),
                "up": sum(x > 0 for x in v), "down": sum(x < 0 for x in v)}
            for k, v in groups.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, required=True,
                    help="a multihop_qa run dir of benchmarks/compare.py")
    ap.add_argument("--f1", action="store_true", help="also run the system (LLM calls)")
    ap.add_argument("--quick", action="store_true", help="the first 5 val and test questions")
    add_json_option(ap)
    args = ap.parse_args()
    store = RunStore(args.run_dir)
    cfg = RunConfig.model_validate(store.get_meta("run_config"))
    s = cfg.split
    examples = load_dataset(cfg.data, s.train + s.val + s.test, cfg.seed)
    _, val, test = split(examples, [s.train, s.val, s.test], seed=s.seed)
    if args.quick:
        val, test = val[:5], test[:5]
    task = multihop_qa(cfg.model, query_sources=("query", "question"))
    base = task.system.default_config()
    plain = multihop_qa(cfg.model).system.default_config().digest  # the run's own system
    stored = {tag: {e.id: store.get_trace(tag, e.id, plain) for e in part}
              for tag, part in (("val", val), ("test", test))}
    missing = [(tag, i) for tag, part in stored.items() for i, t in part.items() if t is None]
    if missing:
        sys.exit(f"{args.run_dir}: {len(missing)} unoptimized traces missing (e.g. {missing[0]})")
    queries = {i: t.step("question_rewriter").outputs["query"]
               for part in stored.values() for i, t in part.items()}
    result: dict = {"run_dir": str(args.run_dir), "questions": len(queries),
                    "recall": recall(val + test, queries)}
    print(f"{'top k':>6} | {'query: gold share / all gold':>28} | {'question':>17}")
    for k in KS:
        q, r = result["recall"][f"query@{k}"], result["recall"][f"question@{k}"]
        print(f"{k:>6} | {q['gold_share']:>15.3f} / {q['all_gold']:.3f} | "
              f"{r['gold_share']:.3f} / {r['all_gold']:.3f}")
    if args.f1:
        with tempfile.TemporaryDirectory() as tmp:  # the run's own cache stays untouched
            src = sqlite3.connect(args.run_dir / CACHE_NAME)
            src.backup(sqlite3.connect(Path(tmp) / CACHE_NAME))
            runtime, _ = build_runtime(models_of(task), Path(tmp) / CACHE_NAME, seed=cfg.seed)
            asked = base.with_value("retriever", "query", "question")
            for tag, part in (("val", val), ("test", test)):
                t0 = time.perf_counter()
                res = evaluate(task, part, asked, runtime, None, tag=tag)
                old = [stored[tag][e.id].reward or 0.0 for e in part]
                d = diff(res.scores, old, cfg.seed)
                groups = by_gold(part, [stored[tag][e.id] for e in part], res.traces)
                result[f"f1_{tag}"] = {"query": sum(old) / len(old), "question": res.mean_reward,
                                       "diff": d, "by_gold": groups,
                                       "wall_s": time.perf_counter() - t0}
                print(f"F1 {tag}: query {sum(old) / len(old):.3f}  question "
                      f"{res.mean_reward:.3f}  diff {d['mean']:+.3f} "
                      f"[{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] P {d['p_better']:.2f}")
                for key, g in groups.items():
                    print(f"  {key} gold paragraphs: {g['questions']} questions, F1 "
                          f"{g['mean_diff']:+.3f} ({g['up']} up, {g['down']} down)")
    if args.json:
        write_result(args.json, result)


if __name__ == "__main__":
    main()
