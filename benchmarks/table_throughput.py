"""Table build throughput vs today's ``coalign evaluate``, side by side in one run.

On the same questions and the same candidate space, each method produces the greedy outputs of
every config (full-system runs = configs x questions) from an empty cache:

- ``evaluate``: today's way, ``evaluate`` of every config in turn with one shared response cache
  (repeated calls are free), prompts laid out instruction first (the systems' default), the
  KV-cache prefix reuse every live call has, one process with 2 llama.cpp threads;
- ``build, instruction first``: the table builder (prefix tree, prefix reuse) on the same layout;
- ``build``: the builder on the table's layout (inputs first: a node's candidates share its
  inputs as a prompt prefix), one process with 2 threads;
- ``build, 2 x 1 thread``: the same split over two processes of one thread each.

``--rows`` (of ``instruction-first``, ``build``, ``two-processes``; default all) runs only the
builder rows named; the evaluate row, the baseline, always runs. Run it on an otherwise idle
machine (stop a background build with SIGTERM, which seals its journal, and restart it after).

    python -m benchmarks.table_throughput benchmarks/tables/multihop_qa --questions 2 \
        --json benchmarks/results/replay/throughput-multihop_qa.json
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from benchmarks._results import add_json_option, write_result
from coalign.backends import build_runtime
from coalign.config import SystemConfig
from coalign.runner import evaluate
from coalign.systems import models_of
from coalign.tables import CandidateSpace, Table, pool_examples

# --rows key -> the row's name in the printed table and the JSON
BUILD_ROWS = {"instruction-first": "build, instruction first", "build": "build",
              "two-processes": "build, 2 x 1 thread"}


def subset(space: CandidateSpace, questions: tuple[str, ...], **options) -> CandidateSpace:
    return replace(space, questions=questions, options={**space.options, **options})


def run_evaluate(space: CandidateSpace) -> dict:
    """Every config evaluated in turn, one shared response cache (what a user does today)."""
    task = space.task()
    examples = pool_examples(space)
    configs = [SystemConfig.from_json(task.system, c.to_json()) for c in space.configs(task)]
    with tempfile.TemporaryDirectory() as tmp:
        runtime, meter = build_runtime(models_of(task), Path(tmp) / "c.sqlite", max_workers=1)
        t0 = time.perf_counter()
        for config in configs:
            evaluate(task, examples, config, runtime)
        wall = time.perf_counter() - t0
    return {"runs": len(configs) * len(examples), "wall_s": wall,
            "llm_calls": meter.total().calls - meter.total().cache_hits}


def run_build(space: CandidateSpace, processes: int, threads: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "t"
        space.save(directory)
        env = {**os.environ, "COALIGN_LM_THREADS": str(threads)}
        t0 = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-m", "coalign", "table", "build",
                                   str(directory), "--level", "greedy", "--part",
                                   f"{i}/{processes}"], env=env, stdout=subprocess.DEVNULL)
                 for i in range(processes)]
        if any(p.wait() != 0 for p in procs):
            raise SystemExit("a build process failed")
        wall = time.perf_counter() - t0
        status = Table(directory).status()
    return {"runs": space.n_configs() * len(space.questions), "wall_s": wall,
            "llm_calls": status.entries}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("--questions", type=int, default=2)
    parser.add_argument("--offset", type=int, default=150, help="first pool question used")
    parser.add_argument("--rows", nargs="+", default=list(BUILD_ROWS), choices=BUILD_ROWS,
                        help="builder rows run after the evaluate row (default: all)")
    add_json_option(parser)
    args = parser.parse_args()
    space = CandidateSpace.load(args.table)
    questions = space.questions[args.offset: args.offset + args.questions]
    today = subset(space, questions, layout="instruction_first")
    table = subset(space, questions)
    os.environ["COALIGN_LM_THREADS"] = "2"
    methods = {"evaluate": lambda: run_evaluate(today),
               "build, instruction first": lambda: run_build(today, 1, 2),
               "build": lambda: run_build(table, 1, 2),
               "build, 2 x 1 thread": lambda: run_build(table, 2, 1)}
    rows = {name: methods[name]() for name in ["evaluate", *(BUILD_ROWS[k] for k in args.rows)]}
    base = rows["evaluate"]["runs"] / rows["evaluate"]["wall_s"]
    print(f"{len(questions)} questions x {space.n_configs()} configs, greedy outputs of every "
          "config, from an empty cache")
    print(f"{'method':<26}{'wall s':>9}{'LLM calls':>11}{'runs/hour':>11}{'speed-up':>10}")
    for name, r in rows.items():
        r["runs_per_hour"] = r["runs"] / r["wall_s"] * 3600
        r["speedup"] = r["runs"] / r["wall_s"] / base
        print(f"{name:<26}{r['wall_s']:>9.0f}{r['llm_calls']:>11}{r['runs_per_hour']:>11.0f}"
              f"{r['speedup']:>9.2f}x")
    result = {"table": str(args.table), "space": space.digest, "questions": list(questions),
              "configs": space.n_configs(), "cpu": platform.processor() or platform.machine(),
              "cores": os.cpu_count(), "load_avg": os.getloadavg(),
              "rows": rows}
    if args.json:
        write_result(args.json, result, indent=1)


if __name__ == "__main__":
    main()
