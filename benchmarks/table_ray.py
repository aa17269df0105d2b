"""A table build on a local Ray cluster: 1 actor against 2 actors per model, side by side.

Builds the first ``--questions`` pool questions of a table's space into fresh directories (no
donor, an empty journal), once per actor count, each on a private local Ray instance (what
``coalign table build DIR --ray local --workers N`` starts), and reports per row the start-up
(Ray's start, and the actors' model loads), the build's wall time after it, questions per
hour, the speed-up over the first row, and whether every build holds the same responses (a
greedy table must not depend on where a call ran). Each actor takes one CPU and runs llama.cpp
with one thread, so on 2 cores the 2-actor row expands two questions at once. Run it on an
otherwise idle machine.

    python -m benchmarks.table_ray benchmarks/tables/code_gen_chunked --questions 4 \
        --json benchmarks/results/ray_table_build.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks._results import add_json_option, head_commit, write_result
from coalign.executors import ExecutorSpec, make_executor
from coalign.tables import CandidateSpace, ShardSet, build_table


def one_build(table: Path, questions: int, workers: int, root: Path) -> dict:
    """Build ``questions`` questions of ``table``'s space with ``workers`` actors per model."""
    space = CandidateSpace.load(table)
    small = CandidateSpace(system=space.system, dataset=space.dataset,
                           questions=space.questions[:questions], params=space.params,
                           model=space.model, options=space.options, samples=space.samples)
    directory = root / f"workers-{workers}"
    small.save(directory)
    t0 = time.perf_counter()
    with make_executor(ExecutorSpec(ray="local", workers=workers, cpus=1.0), workers) as ex:
        ray_s = time.perf_counter() - t0
        starts: list[float] = []

        def first(done, n_done: int, total: int) -> None:
            starts.append(time.perf_counter())

        t1 = time.perf_counter()
        report = build_table(directory, level="greedy", seal_every=questions, executor=ex,
                             on_question=first)
        end = time.perf_counter()
    entries = {k: e.text for k, e in ShardSet(directory, small.system, small.digest)
               .entries.items()}
    return {"workers": workers, "questions": report.done, "llm_calls": report.llm_calls,
            "llm_s": round(report.llm_s, 1), "ray_start_s": round(ray_s, 2),
            "build_wall_s": round(end - t1, 1), "total_wall_s": round(end - t0, 1),
            "questions_per_hour": round(3600 * report.done / (end - t1), 1),
            "first_question_s": round(starts[0] - t1, 1) if starts else None,
            "_entries": entries}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", type=Path, help="a table directory (its space.json is used)")
    ap.add_argument("--questions", type=int, default=4)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    add_json_option(ap)
    args = ap.parse_args()
    commit = head_commit()
    root = Path(tempfile.mkdtemp(prefix="coalign-table-ray-"))
    try:
        rows = [one_build(args.table, args.questions, w, root) for w in args.workers]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    same = all(r["_entries"] == rows[0]["_entries"] for r in rows)
    base = rows[0]["build_wall_s"]
    print(f"{args.table.name}: {args.questions} questions, Ray local, 1 CPU and 1 llama.cpp "
          f"thread per actor, {os.cpu_count()} cores; same responses in every build: {same}")
    print(f"{'actors/model':>12} {'ray start s':>11} {'build s':>8} {'q/hour':>7} "
          f"{'speed-up':>8} {'calls':>6}")
    for r in rows:
        r["speedup"] = round(base / r["build_wall_s"], 2)
        print(f"{r['workers']:>12} {r['ray_start_s']:>11.1f} {r['build_wall_s']:>8.1f} "
              f"{r['questions_per_hour']:>7.1f} {r['speedup']:>8.2f} {r['llm_calls']:>6}")
        del r["_entries"]
    if args.json:
        write_result(args.json, {"table": str(args.table), "questions": args.questions,
                                 "cores": os.cpu_count(), "load_avg_at_end": os.getloadavg(),
                                 "same_responses": same, "rows": rows},
                     commit=commit)


if __name__ == "__main__":
    main()
