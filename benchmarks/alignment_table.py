"""Alignment of local rewards on a replay table's pairs (``alignment.py --table DIR``).

Pairs come from the table (``coalign.tables.table_pairs``: every pair of a component's distinct
outputs on one input, labelled by the full path's reward with the downstream config at its
start values; exact on a greedy table), split by question into train and held-out. Reports,
per component, held-out pairwise accuracy pooled over pairs and averaged per input, for the
LRF trained on the train pairs (MiniLM embedding + the cheap features, and the features alone;
with ``--finetune`` also MiniLM with LoRA adapters trained jointly with the heads),
embedding similarity to a known-good output, a shorter-output heuristic and random; the LRF's
data-efficiency curve; and, for HotpotQA, gold-informed measures (does the output contain the
gold answer, how many gold passages it holds): per component, the share of decisive pairs
such a measure separates and how often it picks the better path there. They bound what any
reading of (input, output) can reach: a pair no quality measure separates is decided by how
the downstream model happens to react. No LLM call, except for the LLM-judge row (``--judge
N``: up to N held-out decisive pairs per component, ``table_judge.py``), whose answers are
read from ``TABLE/judge`` and, with ``--judge-live``, computed where missing; the other rankers
are scored on the same sample beside it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._results import write_result
from coalign.data import Example, normalize_answer, split
from coalign.pairs import PreferencePair
from coalign.rewards import (
    EmbeddingSimilarityRanker,
    FinetuneConfig,
    LocalRewardModel,
    RandomReward,
    TrainConfig,
    data_efficiency,
    finetune_backbone,
    make_backbone,
    pairwise_accuracy,
    shorter_output_reward,
    values_text,
)
from coalign.tables import Table, table_pairs


def known_good(system: str, examples: list[Example]) -> dict[str, dict[str, dict]]:
    """Per component, a known-good output per question: the embedding baseline's reference."""
    out: dict[str, dict[str, dict]] = {}
    for e in examples:
        if system == "multihop_qa":
            gold = [p for p in e.inputs["paragraphs"] if p["title"] in e.meta["supporting_titles"]]
            refs = {"question_rewriter": {"query": " ".join(e.meta["supporting_titles"])},
                    "retriever": {"passages": gold},
                    "info_extractor": {"info": f"{e.inputs['question']} {e.target}"},
                    "answer_generator": {"answer": e.target}}
        elif system == "code_gen":
            code = e.meta.get("reference_code") or ""
            refs = {"code_generator": {"code": code}, "reviser": {"final_code": code},
                    "test_generator": {"tests": list(e.target)}, "executor": {"feedback": ""}}
        else:
            refs = {}
        for comp, ref in refs.items():
            out.setdefault(comp, {})[e.id] = ref
    return out


def gold_measures(system: str, examples: list[Example],
                  metric: Callable[[Any, Example], float]) -> dict[str, Callable[..., float]]:
    """Quality measures that read the gold answer (``fn(outputs, example_id)``); for code,
    whether the code passes the hidden tests (the task's ``metric``), and beside it whether it
    passes the example test, which reads no gold (the test is an input): what a local reward
    could run."""
    if system == "code_gen":
        return code_measures(examples, metric)
    if system != "multihop_qa":
        return {}
    by_id = {e.id: e for e in examples}

    def answer_in_output(outputs: dict, eid: str) -> float:
        target = by_id[eid].target
        golds = [normalize_answer(g) for g in (target if isinstance(target, list) else [target])]
        text = f" {normalize_answer(values_text(outputs))} "
        return float(any(f" {g} " in text for g in golds if g))

    def gold_passages(outputs: dict, eid: str) -> float:
        titles = set(by_id[eid].meta.get("supporting_titles", []))
        return float(sum(isinstance(p, dict) and p.get("title") in titles
                         for p in outputs.get("passages") or []))

    return {"answer in output": answer_in_output, "gold passages": gold_passages}


def code_measures(examples: list[Example], metric: Callable[[Any, Example], float]
                  ) -> dict[str, Callable[..., float]]:
    """Pass@1 (``metric``) on the hidden tests, and on the example test alone."""
    by_id = {e.id: e for e in examples}

    def code_of(outputs: dict) -> str:
        code = outputs.get("code", outputs.get("final_code"))
        return code if isinstance(code, str) else ""

    def example_test(outputs: dict, eid: str) -> float:
        e = by_id[eid]
        return metric(code_of(outputs), dataclasses.replace(e, target=(e.inputs["example_test"],)))

    def hidden_tests(outputs: dict, eid: str) -> float:
        return metric(code_of(outputs), by_id[eid])

    return {"passes the example test (no gold)": example_test,
            "passes the hidden tests": hidden_tests}


def measure_row(pairs: list[PreferencePair], fn: Callable[..., float]) -> dict[str, float]:
    """Per-input accuracy of ranking by ``fn`` (a tie counts half), the share of pairs it
    separates, and its accuracy on those."""
    by_input: dict[str, list[float]] = {}
    separated = []
    for p in pairs:
        gap = (fn(p.output_a, p.example_id) - fn(p.output_b, p.example_id)) * (
            1 if p.label == "a" else -1)
        hit = 1.0 if gap > 0 else 0.5 if gap == 0 else 0.0
        by_input.setdefault(p.example_id + str(p.meta.get("upstream")), []).append(hit)
        if gap != 0:
            separated.append(hit)
    return {"per_input": sum(sum(v) / len(v) for v in by_input.values()) / len(by_input),
            "separated": len(separated) / len(pairs),
            "acc_separated": sum(separated) / len(separated) if separated else None}


def per_input(result: Any, component: str) -> float:
    """Accuracy averaged over inputs (each input's pairs weigh as one)."""
    accs = [c / t for c, t in result.by_input[component].values() if t]
    return sum(accs) / len(accs)


def judge_rows(table_dir: Path, table: Table, descriptions: dict[str, str],
               train: list[PreferencePair], test: list[PreferencePair],
               rankers: dict[str, Any], *, per_component: int, live: bool,
               seed: int) -> dict[str, dict]:
    """Per component: the judge's held-out accuracy on a sample of ``per_component`` decisive
    pairs, and every other ranker's on the same sample."""
    from benchmarks.table_judge import close_judge, judge_ranker, sample_pairs

    sample = sample_pairs(test, per_component, seed)
    judge, lm = judge_ranker(table_dir, table.space, descriptions, train, live=live, seed=seed)
    t0 = time.perf_counter()

    class Sealing:  # new answers go into a shard every 25 calls: a killed run keeps them
        def compare(self, pair: PreferencePair) -> float:
            verdict = judge.compare(pair)
            if live and lm.shards.pending >= 25:
                lm.shards.seal()
            return verdict

    try:
        results = {"judge": pairwise_accuracy(Sealing(), sample)}
    finally:
        close_judge(lm)
    results.update({name: pairwise_accuracy(r, sample) for name, r in rankers.items()})
    rows: dict[str, dict] = {}
    for comp in dict.fromkeys(p.component for p in sample):
        rows[comp] = {"pairs": sum(p.component == comp for p in sample),
                      **{f"{n}_per_input": per_input(r, comp) for n, r in results.items()},
                      **{f"{n}_acc": r.accuracy(comp) for n, r in results.items()}}
    print(f"LLM judge ({len(sample)} held-out pairs, {getattr(lm, 'calls', 0)} new answers, "
          f"{judge.unparsed} unparsed, {time.perf_counter() - t0:.0f} s), per input:")
    for comp, r in rows.items():
        print(f"  {comp:<18} {r['pairs']:>4} pairs: " + ", ".join(
            f"{n} {r[f'{n}_per_input']:.3f}" for n in results))
    rows["_meta"] = {"per_component": per_component, "unparsed": judge.unparsed,
                     "new_answers": getattr(lm, "calls", 0), "k": judge.k}
    return rows


def run(table_dir: Path, *, seed: int, backbone: str, train_share: float,
        json_path: Path | None, use_embedding: bool = True, judge: int = 0,
        judge_live: bool = False, finetune: bool = False, head: str = "linear") -> dict:
    t0 = time.perf_counter()
    table = Table(table_dir)
    system = table.space.system
    questions = table.finished()
    n_train = max(1, round(len(questions) * train_share))
    train_q, test_q = split(questions, [n_train, len(questions) - n_train], seed=seed)
    comps = sorted({k.partition(".")[0] for k in table.space.params},
                   key=[c.name for c in table.space.task().system.components].index)
    train: list[PreferencePair] = []
    test: list[PreferencePair] = []
    for comp in comps:
        train += table_pairs(table, comp, train_q)
        test += table_pairs(table, comp, test_q)
    pairs_s = time.perf_counter() - t0
    task = table.space.task()
    descriptions = {c.name: c.description for c in task.system.components}
    bb = make_backbone(backbone)
    config = TrainConfig(use_embedding=use_embedding, head=head)
    lrf = LocalRewardModel(bb, descriptions, config)
    report = lrf.fit(train)
    # a component whose train pairs were all ties has no head: its held-out pairs are counted
    # and left out of every ranker's accuracy (the loop does not draw such a component either)
    headless = sorted({p.component for p in test if not lrf.can_score(p.component)})
    everything, test = test, [p for p in test if p.component not in headless]
    acc = {"lrf": pairwise_accuracy(lrf, test), "random": pairwise_accuracy(RandomReward(seed),
                                                                           test)}
    if use_embedding:  # the same head on the cheap features alone, side by side
        plain = LocalRewardModel(bb, descriptions, TrainConfig(use_embedding=False, head=head))
        plain.fit(train)
        acc["features_lrf"] = pairwise_accuracy(plain, test)
    checks = {c.name: c.checks for c in task.system.components if c.checks}
    if checks:  # the loop's default: the features-only head plus the components' checks
        checked = LocalRewardModel(bb, descriptions, TrainConfig(use_embedding=False, head=head),
                                   checks)
        checked.fit(train)
        acc["checks_lrf"] = pairwise_accuracy(checked, test)
        # side by side: the head trained on what the checks leave unexplained
        residual = LocalRewardModel(bb, descriptions, TrainConfig(
            use_embedding=False, head=head, residual_heads=True), checks)
        residual.fit(train)
        acc["checks_residual_lrf"] = pairwise_accuracy(residual, test)
    if finetune:  # MiniLM with LoRA adapters trained jointly with the heads on the train pairs
        tuned = LocalRewardModel(make_backbone("minilm"), descriptions,
                                 TrainConfig(use_embedding=True, head=head))
        finetune_backbone(tuned, train, FinetuneConfig(mode="lora", seed=seed))
        acc["lora_lrf"] = pairwise_accuracy(tuned, test)
    acc["shorter"] = pairwise_accuracy(shorter_output_reward(), test)
    measures = gold_measures(system, test_q, task.metric)
    refs = known_good(system, test_q)
    rows: dict[str, dict] = {}
    for comp in comps:
        held = [p for p in everything if p.component == comp]
        decisive = [p for p in held if not p.is_tie]
        row = {"held_out_pairs": len(decisive), "held_out_ties": len(held) - len(decisive),
               "train_pairs": sum(p.component == comp and not p.is_tie for p in train),
               "inputs": len({p.example_id + str(p.meta.get("upstream")) for p in decisive})}
        if comp in headless:
            row["note"] = "no head: every train pair was a tie"
        elif decisive:
            for name, res in acc.items():
                row[f"{name}_acc"] = res.accuracy(comp)
                row[f"{name}_per_input"] = per_input(res, comp)
            if comp in refs:
                emb = pairwise_accuracy(EmbeddingSimilarityRanker(bb, refs[comp]), decisive)
                row["embed_acc"], row["embed_per_input"] = emb.accuracy(comp), per_input(emb, comp)
            for name, fn in measures.items():
                row.setdefault("gold", {})[name] = measure_row(decisive, fn)
        rows[comp] = row
    scored = [r for r in rows.values() if "lrf_acc" in r]
    mean = {f"{name}_{kind}": sum(r[f"{name}_{kind}"] for r in scored) / len(scored)
            for name in acc for kind in ("per_input", "acc")}
    # the curve of the default local reward: with the components' checks where they have any
    efficiency = data_efficiency(lambda: LocalRewardModel(bb, descriptions, config, checks),
                                 train, test, seed=seed)
    if judge:
        rankers = {"lrf": lrf, "random": RandomReward(seed), "shorter": shorter_output_reward()}
        if use_embedding:
            rankers["features_lrf"] = plain
        if finetune:
            rankers["lora_lrf"] = tuned
        if checks:
            rankers["checks_lrf"] = checked
        judged = judge_rows(table_dir, table, descriptions, train, test, rankers,
                            per_component=judge, live=judge_live, seed=seed)
    result = {"table": str(table_dir), "system": system, "questions": len(questions),
              "train_questions": n_train, "seed": seed, "backbone": backbone,
              "use_embedding": use_embedding, "finetune": finetune, "head": head,
              "components": rows, "mean": mean, **({"judge": judged} if judge else {}),
              "efficiency": {str(k): v for k, v in efficiency.items()},
              "train_pairs_per_s": report.pairs_per_s, "pairs_s": pairs_s,
              "wall_s": time.perf_counter() - t0}
    print(f"{system}: {len(questions)} questions ({n_train} train), pairs in {pairs_s:.0f} s")
    print(f"{'component':<18} {'pairs':>6} {'ties':>6} {'train':>6} {'LRF':>6} {'/input':>6} "
          f"{'embed':>6} {'random':>6}   per input: " + ", ".join(acc))
    for comp, r in rows.items():
        if "lrf_acc" not in r:
            why = r.get("note", "no decisive held-out pair")
            print(f"{comp:<18} {r['held_out_pairs']:>6} {r['held_out_ties']:>6} "
                  f"{r['train_pairs']:>6}  ({why})")
            continue
        emb = f"{r['embed_acc']:>6.3f}" if "embed_acc" in r else f"{'-':>6}"
        print(f"{comp:<18} {r['held_out_pairs']:>6} {r['held_out_ties']:>6} "
              f"{r['train_pairs']:>6} {r['lrf_acc']:>6.3f} {r['lrf_per_input']:>6.3f} {emb} "
              f"{r['random_acc']:>6.3f}   " + ", ".join(f"{r[f'{n}_per_input']:.3f}" for n in acc))
        for name, g in r.get("gold", {}).items():
            where = "" if g["acc_separated"] is None else f", right on {g['acc_separated']:.3f}"
            print(f"{'':<18} gold measure {name!r}: per input {g['per_input']:.3f}; separates "
                  f"{g['separated']:.1%} of the pairs{where}")
    print("mean per-input: " + ", ".join(f"{n} {mean[f'{n}_per_input']:.3f}" for n in acc))
    print("data efficiency: " + ", ".join(f"{k:g}: {v:.3f}" for k, v in efficiency.items()))
    if json_path:
        result = write_result(json_path, result)
    return result
