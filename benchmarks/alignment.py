"""Alignment of local reward functions with the global reward, on real HotpotQA.

Collects Monte-Carlo preference pairs for every component of ``multihop_qa`` (local Qwen2.5-0.5B)
on a train and a held-out split of HotpotQA questions, trains the shared-backbone LRFs on the
train pairs, and reports held-out pairwise ranking accuracy per component for the LRF, an LLM
judge with in-context examples, embedding similarity to a known-good output, and random; plus data
efficiency (12.5/25/50/100% of the train pairs) and training throughput. Collection goes through
the response cache in the run directory, so a rerun repeats no LLM call.

    python -m benchmarks.alignment [--quick] [--json PATH] [--run-dir DIR]
        [--train N] [--held-out N] [--n N] [--backbone minilm|hashing|qwen]

``--table DIR`` measures on a replay table's pairs instead (no LLM call; alignment_table.py).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks._results import add_json_option, write_result
from coalign.backends import build_runtime
from coalign.data import Example, load_hotpotqa, split
from coalign.pairs import PreferencePair
from coalign.rewards import (
    EmbeddingSimilarityRanker,
    LLMJudgeRanker,
    LocalRewardModel,
    RandomReward,
    data_efficiency,
    make_backbone,
    pairwise_accuracy,
)
from coalign.rollouts import RolloutSpec, collect_pairs
from coalign.runner import CACHE_NAME
from coalign.store import RunStore
from coalign.systems import multihop_qa
from coalign.task import Task

MODEL = "qwen2.5-0.5b"


def specs(task: Task, n: int) -> dict[str, RolloutSpec]:
    """Sampling for the LLM components, every k for the retriever."""
    out = {}
    for comp in task.system.components:
        if "k" in comp.params:
            out[comp.name] = RolloutSpec(param="k", alternatives=comp.params["k"].options)
        else:
            out[comp.name] = RolloutSpec(n=n, temperature=1.0)
    return out


def collect(task: Task, examples: list[Example], runtime, store: RunStore, tag: str,
            n: int) -> tuple[list[PreferencePair], dict[str, int], float]:
    pairs: list[PreferencePair] = []
    ties: dict[str, int] = {}
    config = task.system.default_config()
    base = {e.id: task.system.run(e.id, e.inputs, config, runtime) for e in examples}
    runs = 0.0
    for name, spec in specs(task, n).items():
        col = collect_pairs(task, name, examples, config, runtime, spec, store=store, tag=tag,
                            base_traces=base)
        pairs += col.pairs
        ties[name] = len(col.ties)
        runs += col.account.equivalent_runs()
        print(f"  {tag:<8} {name:<18} pairs {len(col.pairs):>4}  ties {len(col.ties):>4}",
              flush=True)
    return pairs, ties, runs


def known_good(task: Task, examples: list[Example]) -> dict[str, dict[str, dict]]:
    """Per component, a known-good output per example (the HBC baseline's reference)."""
    out: dict[str, dict[str, dict]] = {c.name: {} for c in task.system.components}
    for e in examples:
        gold = [p for p in e.inputs["paragraphs"] if p["title"] in e.meta["supporting_titles"]]
        out["question_rewriter"][e.id] = {"query": " ".join(e.meta["supporting_titles"])}
        out["retriever"][e.id] = {"passages": gold}
        out["info_extractor"][e.id] = {"info": f"{e.inputs['question']} {e.target}"}
        out["answer_generator"][e.id] = {"answer": e.target}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    add_json_option(parser)
    parser.add_argument("--run-dir", type=Path, default=Path("runs/alignment"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train", type=int, help="train questions (full: 45)")
    parser.add_argument("--held-out", type=int, help="held-out questions (full: 15)")
    parser.add_argument("--n", type=int, help="samples per LLM component (full: 3)")
    parser.add_argument("--backbone", default="minilm",
                        help="LRF backbone: minilm, hashing (lexical, no model) or qwen (the "
                             "task model's mean-pooled hidden state, via llama.cpp)")
    parser.add_argument("--table", type=Path, help="a replay table directory: its pairs")
    parser.add_argument("--no-embedding", action="store_true",
                        help="with --table: LRF heads read the cheap features only")
    parser.add_argument("--finetune", action="store_true",
                        help="with --table: also the LRF whose MiniLM is fine-tuned (LoRA) on "
                             "the train pairs")
    parser.add_argument("--head", choices=["linear", "mlp"], default="linear",
                        help="with --table: the LRF heads (mlp: one hidden layer)")
    parser.add_argument("--train-share", type=float, default=0.5,
                        help="with --table: share of the questions whose pairs train the LRF")
    parser.add_argument("--judge", type=int, default=0, metavar="N",
                        help="with --table: the LLM-judge row on up to N held-out decisive "
                             "pairs per component, from answers kept in TABLE/judge")
    parser.add_argument("--judge-live", action="store_true",
                        help="with --judge: compute missing judge answers with the local model "
                             "(and keep them)")
    args = parser.parse_args()
    if args.table:
        from benchmarks.alignment_table import run

        run(args.table, seed=args.seed, backbone=args.backbone, train_share=args.train_share,
            json_path=args.json, use_embedding=not args.no_embedding, judge=args.judge,
            judge_live=args.judge_live, finetune=args.finetune, head=args.head)
        return
    n_train, n_test, n = (5, 3, 2) if args.quick else (45, 15, 3)
    n_train, n_test, n = args.train or n_train, args.held_out or n_test, args.n or n
    run_dir = args.run_dir / ("quick" if args.quick else "full")
    t0 = time.perf_counter()

    task = multihop_qa(MODEL)
    train_q, test_q = split(load_hotpotqa(), [n_train, n_test], seed=args.seed)
    runtime, _ = build_runtime([MODEL], run_dir / CACHE_NAME, max_workers=1, seed=args.seed)
    store = RunStore(run_dir)
    print(f"collecting pairs: {n_train} train / {n_test} held-out HotpotQA questions", flush=True)
    train, _, train_runs = collect(task, train_q, runtime, store, "train", n)
    test, test_ties, test_runs = collect(task, test_q, runtime, store, "test", n)

    descriptions = {c.name: c.description for c in task.system.components}
    backbone = make_backbone(args.backbone)
    lrf = LocalRewardModel(backbone, descriptions)
    report = lrf.fit(train)
    judge_lm = runtime.lm(MODEL)
    judge = LLMJudgeRanker(judge_lm, descriptions, examples=train, k=3, seed=args.seed)
    refs = known_good(task, test_q)
    names = [c.name for c in task.system.components]
    rankers = {"lrf": lrf, "judge": judge, "random": RandomReward(args.seed)}
    acc = {name: pairwise_accuracy(r, test) for name, r in rankers.items()}
    embed = {}
    for comp in names:
        comp_test = [p for p in test if p.component == comp]
        if comp_test:
            embed[comp] = pairwise_accuracy(EmbeddingSimilarityRanker(backbone, refs[comp]),
                                            comp_test).accuracy(comp)
    efficiency = data_efficiency(lambda: LocalRewardModel(backbone, descriptions), train, test,
                                 seed=args.seed)

    components = {}
    for comp in names:
        n_pairs = sum(p.component == comp for p in test)
        if not n_pairs:
            continue
        components[comp] = {"pairs": n_pairs, "ties": test_ties.get(comp, 0),
                            "train_pairs": sum(p.component == comp for p in train),
                            "lrf_acc": acc["lrf"].accuracy(comp),
                            "judge_acc": acc["judge"].accuracy(comp),
                            "embed_acc": embed[comp], "random_acc": acc["random"].accuracy(comp)}
    mean = {k: sum(c[f"{k}_acc"] for c in components.values()) / len(components)
            for k in ("lrf", "judge", "embed", "random")}
    result = {f"{k}_acc_mean": v for k, v in mean.items()}
    result.update({"components": components,
                   "efficiency": {str(k): v for k, v in efficiency.items()},
                   "train_pairs_per_s": report.pairs_per_s,
                   "collection_equiv_runs": train_runs + test_runs,
                   "judge_unparsed": judge.unparsed, "wall_s": time.perf_counter() - t0,
                   # made now vs answered by the run dir's response cache (a rerun: 0 made)
                   "llm_calls": judge_lm.misses, "llm_cache_hits": judge_lm.hits,
                   "split": {"train_questions": n_train, "test_questions": n_test,
                             "seed": args.seed, "n": n}, "backbone": args.backbone})

    print(f"\n{'component':<18} {'pairs':>5} {'ties':>5} {'LRF':>6} {'judge':>6} {'embed':>6} "
          f"{'random':>6}")
    for comp, c in components.items():
        print(f"{comp:<18} {c['pairs']:>5} {c['ties']:>5} {c['lrf_acc']:>6.3f} "
              f"{c['judge_acc']:>6.3f} {c['embed_acc']:>6.3f} {c['random_acc']:>6.3f}")
    print(f"{'mean':<18} {'':>5} {'':>5} {mean['lrf']:>6.3f} {mean['judge']:>6.3f} "
          f"{mean['embed']:>6.3f} {mean['random']:>6.3f}")
    print("data efficiency: " + ", ".join(f"{k:g}: {v:.3f}" for k, v in efficiency.items()))
    print(f"training throughput: {report.pairs_per_s:.0f} pairs/s; wall {result['wall_s']:.0f} s; "
          f"LLM calls {judge_lm.misses} made, {judge_lm.hits} from the response cache")
    if args.json:
        write_result(args.json, result)


if __name__ == "__main__":
    main()
