"""Evaluation throughput: the thread executor against the Ray executor, side by side in one run.

Both evaluate the same generated-world questions with multihop_qa from an empty response cache
(every call live). Threads share one llama.cpp model in this process (its calls are serialized;
llama.cpp uses every idle core); Ray runs ``--workers`` actors, each with its own model and
``cores / workers`` CPUs. Model loading (and actor start) is timed apart from evaluation. The
scores of the two must agree (greedy decoding); the table says whether they do.

    python -m benchmarks.ray_throughput [--examples 24] [--workers 2]
        [--model qwen2.5-0.5b] [--ray local|ADDRESS] [--json out.json] [--quick]

``--quick``: 2 questions with SmolLM2-135M, a smoke test of the script, not a figure.
Run it on an otherwise idle machine: other processes on the cores distort both columns.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._results import add_json_option, write_result
from coalign.backends import build_runtime
from coalign.data import make_world
from coalign.executors import BaseExecutor, ThreadExecutor
from coalign.imports import load_task
from coalign.runner import CACHE_NAME, evaluate
from coalign.store import RunStore
from coalign.systems import models_of


def measure(name: str, make: Callable[[], BaseExecutor], task, examples, run_dir: Path
            ) -> dict:
    t0 = time.perf_counter()
    executor = make()
    with executor:
        runtime, _ = build_runtime(models_of(task), run_dir / CACHE_NAME, executor=executor)
        for lm in runtime.lms.values():  # load before timing (Ray actors have loaded already)
            load = getattr(getattr(lm, "inner", lm), "load", None)
            if load is not None:
                load()
        startup = time.perf_counter() - t0
        with RunStore(run_dir) as store:
            result = evaluate(task, examples, task.system.default_config(), runtime, store)
    wall = result.wall_s
    return {"executor": name, "workers": executor.workers, "examples": len(examples),
            "llm_calls": result.usage.calls, "startup_s": round(startup, 2),
            "wall_s": round(wall, 2), "examples_per_s": round(len(examples) / wall, 4),
            "calls_per_s": round(result.usage.calls / wall, 4),
            "mean_reward": result.mean_reward, "scores": result.scores}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=24)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--ray", default="local", help="local (start one here) or a cluster address")
    add_json_option(ap)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.examples, args.model = 2, "smollm2-135m"

    import ray

    from coalign.executors import RayExecutor

    cpus = os.cpu_count() or 1
    if args.ray == "local":  # a private cluster sized to this machine, stopped at the end
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    per_actor = max(1.0, cpus / args.workers) if args.ray == "local" else 1.0
    task = load_task("multihop_qa", args.model, None)
    examples = make_world(seed=0, n_questions=args.examples)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:  # empty caches: every call is live
        rows.append(measure("threads", lambda: ThreadExecutor(args.workers), task, examples,
                            Path(tmp) / "threads"))
        rows.append(measure("ray", lambda: RayExecutor(args.ray, args.workers, cpus=per_actor),
                            task, examples, Path(tmp) / "ray"))
    if ray.is_initialized():
        ray.shutdown()
    same = rows[0]["scores"] == rows[1]["scores"]
    speedup = rows[1]["examples_per_s"] / rows[0]["examples_per_s"]

    cols = ("executor", "workers", "examples", "llm_calls", "startup_s", "wall_s",
            "examples_per_s", "calls_per_s", "mean_reward")
    print(f"multihop_qa on the world, {args.model}, {cpus} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    print("  ".join(f"{c:>14}" for c in cols))
    for row in rows:
        print("  ".join(f"{row[c]:>14.4g}" if isinstance(row[c], float) else f"{row[c]:>14}"
                        for c in cols))
    print(f"ray / threads throughput: {speedup:.2f}x; same scores: {same}")
    if args.json:
        out = {"model": args.model, "cores": cpus, "ray_address": args.ray,
               "cpus_per_actor": per_actor, "quick": args.quick,
               "load_average": os.getloadavg()[0], "python": platform.python_version(),
               "ray_version": ray.__version__, "rows": rows, "speedup": speedup,
               "same_scores": same}
        write_result(args.json, out)


if __name__ == "__main__":
    main()
