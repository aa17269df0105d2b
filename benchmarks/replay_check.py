"""Replay vs live: the same configs evaluated from the table and by the live model.

For the first ``--questions`` finished questions of a table and ``--configs`` configs of its
space (the starting one, then a seeded draw), runs ``evaluate`` twice: on the replay backend
and live (the embedded model as any live run uses it, with a fresh response cache). Prints and
writes per config: mean metric both ways, questions whose score differs, LLM outputs that differ
(a table built before prefix reuse was chunk-aligned can hold greedy outputs that a live call
does not reproduce), and timings.

    python -m benchmarks.replay_check benchmarks/tables/multihop_qa --questions 20 \
        --json benchmarks/results/replay/check-multihop_qa.json
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from benchmarks._results import add_json_option, write_result
from coalign.backends import build_runtime
from coalign.runner import evaluate
from coalign.systems import models_of
from coalign.tables import Table


def outputs(trace) -> list[str]:
    return [json.dumps(s.outputs, sort_keys=True, default=str) for s in trace.steps]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--configs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    add_json_option(parser)
    args = parser.parse_args()
    table = Table(args.table)
    examples = table.finished("greedy")[: args.questions]
    space = table.space
    task = space.task()
    configs = list(space.configs(task))
    rng = random.Random(args.seed)
    chosen = [configs[0], *rng.sample(configs[1:], args.configs - 1)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        live_rt, _ = build_runtime(models_of(task), Path(tmp) / "cache.sqlite", max_workers=1)
        replay_rt, _ = build_runtime(models_of(task), None, max_workers=1,
                                     lm=f"replay:{args.table}")
        for config in chosen:
            t0 = time.perf_counter()
            rep = evaluate(task, examples, config, replay_rt)
            t_rep = time.perf_counter() - t0
            t0 = time.perf_counter()
            live = evaluate(task, examples, config, live_rt)
            t_live = time.perf_counter() - t0
            out_pairs = [(a, b) for r, lv in zip(rep.traces, live.traces, strict=True)
                         for a, b in zip(outputs(r), outputs(lv), strict=True)]
            rows.append({
                "config": config.to_json(), "digest": config.digest[:12],
                "replay_mean": rep.mean_reward, "live_mean": live.mean_reward,
                "questions": len(examples),
                "scores_differ": sum(a != b for a, b in zip(rep.scores, live.scores,
                                                            strict=True)),
                "outputs": len(out_pairs),
                "outputs_differ": sum(a != b for a, b in out_pairs),
                "replay_s": t_rep, "live_s": t_live, "live_llm_calls": live.usage.calls,
            })
            r = rows[-1]
            print(f"{r['digest']}  replay {r['replay_mean']:.4f}  live {r['live_mean']:.4f}  "
                  f"scores differ {r['scores_differ']}/{r['questions']}  outputs differ "
                  f"{r['outputs_differ']}/{r['outputs']}  replay {t_rep:.2f} s, live "
                  f"{t_live:.0f} s")
    result = {"table": str(args.table), "space": space.digest, "rows": rows}
    if args.json:
        write_result(args.json, result, indent=1)


if __name__ == "__main__":
    main()
