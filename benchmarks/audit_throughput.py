"""Streaming audit throughput on one core, and peak memory for two very different file sizes.

Generates two audit-format JSONL files (seeded synthetic pairs: 3-5 raters with ties and
abstentions, varied prompt/response lengths, stored digests that are re-verified) in a temp
folder, then audits each in a fresh subprocess pinned to one CPU core, so each process's peak
RSS belongs to one file. A third subprocess imports the package and stops, for the baseline.
A fourth loads the small file as ``PreferencePair`` objects (untimed) and times
``audit_preferences`` on that list.

    python -m benchmarks.audit_throughput [--quick] --json results.json

``pairs_per_s`` is pairs / CPU seconds of the audit process on the large file (CPU time, not
wall time, because the machine may be shared); wall-clock rates are reported alongside.
``objects_pairs_per_s`` is the same rate for ``audit_preferences`` on in-memory pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._results import ROOT, add_json_option, write_result

CONTRACT = ROOT / "examples" / "audit" / "fixture_contract.json"
WORDS = ("the answer depends on context and the evidence shown to the rater who may prefer "
         "fluent text over a correct cautious reply so labels need care").split()


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def generate(path: Path, count: int, seed: int) -> None:
    """Write ``count`` valid pairs (every 50th prompt repeated) with their digests."""
    from coalign.audit import PreferencePair, load_contract, write_pairs_jsonl

    scope = load_contract(CONTRACT).scope
    rng = random.Random(seed)

    def pairs():
        for i in range(count):
            side = "left" if rng.random() < 0.5 else "right"
            other = "right" if side == "left" else "left"
            votes = [side] * rng.randint(2, 3) + [rng.choice([other, "tie", "abstain"])]
            votes += ["tie"] * rng.randint(0, 1)
            q = i - 1 if i % 50 == 49 else i
            pc, rc = -rng.uniform(5, 80), -rng.uniform(5, 80)
            yield PreferencePair(
                scope, f"pair-{i}", f"prompt-{q}", f"Q{q}: " + _text(random.Random(q), 8, 40),
                f"A{i}: " + _text(rng, 10, 60), f"B{i}: " + _text(rng, 10, 60), side,
                [(f"rater-{j}", v) for j, v in enumerate(votes)],
                pc, pc - rng.uniform(0, 20), rc, rc - rng.uniform(0, 20))

    write_pairs_jsonl(path, pairs())


def worker(path: str | None, objects: bool = False) -> None:
    """Audit one file (or, with ``objects``, its pairs in a list) on one core; print figures."""
    core = sorted(os.sched_getaffinity(0))[-1]
    os.sched_setaffinity(0, {core})
    from coalign.audit import audit_jsonl, audit_preferences, iter_pairs_jsonl, load_contract

    result: dict[str, object] = {"core": core}
    if path is not None:
        contract = load_contract(CONTRACT)
        if objects:
            pairs = [pair for _, pair in iter_pairs_jsonl(Path(path), contract.scope)]
        wall, cpu = time.perf_counter(), time.process_time()
        report = audit_preferences(contract, pairs) if objects else audit_jsonl(contract, path)
        result.update(cpu_s=time.process_time() - cpu, wall_s=time.perf_counter() - wall,
                      pairs=report.pairs, status=report.status,
                      findings=[f.code for f in report.findings])
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def run_worker(path: Path | None, objects: bool = False) -> dict:
    args = [sys.executable, "-m", "benchmarks.audit_throughput",
            "--objects" if objects else "--worker", str(path) if path else "-"]
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="5k and 100k pairs (default: 20k and 500k)")
    add_json_option(parser)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--objects", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker or args.objects:
        worker(None if args.worker == "-" else args.worker or args.objects, bool(args.objects))
        return
    # Turn SIGTERM into an exception so the temporary folder (hundreds of MB) is removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sizes = (5_000, 100_000) if args.quick else (20_000, 500_000)
    rows = []
    with tempfile.TemporaryDirectory(prefix="coalign-audit-bench-") as tmp:
        baseline = run_worker(None)["peak_rss_mb"]
        for count in sizes:
            path = Path(tmp) / f"pairs_{count}.jsonl"
            generate(path, count, seed=count)
            run = run_worker(path)
            run.update(file_mb=path.stat().st_size / 2**20,
                       pairs_per_s=run["pairs"] / run["cpu_s"],
                       pairs_per_s_wall=run["pairs"] / run["wall_s"])
            if count == sizes[0]:
                objects = run_worker(path, objects=True)
            path.unlink()
            rows.append(run)
    print(f"{'pairs':>9} {'file MB':>8} {'cpu s':>7} {'wall s':>7} {'pairs/s cpu':>12} "
          f"{'pairs/s wall':>13} {'peak RSS MB':>12}  status")
    for r in rows:
        print(f"{r['pairs']:>9} {r['file_mb']:>8.1f} {r['cpu_s']:>7.2f} {r['wall_s']:>7.2f} "
              f"{r['pairs_per_s']:>12.0f} {r['pairs_per_s_wall']:>13.0f} "
              f"{r['peak_rss_mb']:>12.1f}  {r['status']} {','.join(r['findings'])}")
    objects_rate = objects["pairs"] / objects["cpu_s"]
    print(f"audit_preferences on {objects['pairs']} in-memory pairs: {objects_rate:.0f} "
          "pairs/s cpu")
    print(f"baseline (import only) peak RSS MB: {baseline:.1f}; one core per audit process")
    result = {"pairs_per_s": rows[-1]["pairs_per_s"], "objects_pairs_per_s": objects_rate,
              "peak_rss_mb": max(r["peak_rss_mb"] for r in rows),
              "pairs_per_s_wall": rows[-1]["pairs_per_s_wall"],
              "baseline_rss_mb": baseline, "runs": rows, "quick": args.quick}
    if args.json:
        write_result(args.json, result)


if __name__ == "__main__":
    main()
