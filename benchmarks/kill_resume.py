"""kill -9 at random moments, then ``coalign resume``: does the run end as the uninterrupted one?

A replay-table optimization (no LLM call, so every run is deterministic) runs once to the end;
then each trial starts it again in a fresh run dir, kills it (SIGKILL) after a random share of
the reference's wall time, resumes it, and kills the resumed process too while ``--kills``
allow, before letting it finish. A trial is identical when its ledger (every step's state,
config, value and validation scores) and its exported system file equal the reference's. The
default run (code_gen, seed 0) accepts the generator prompt with two demos, so the check covers
demos, whose rendering once made resumed runs diverge.

    python -m benchmarks.kill_resume --trials 5 \\
        --json benchmarks/results/reliability/kill-resume-demos.json
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._results import ROOT, add_json_option, head_commit, write_result
from coalign.store import DB_NAME, RunStore

CONFIG = {"system": "code_gen", "data": "mbpp", "lm": "replay:benchmarks/tables/code_gen",
          "seed": 0, "split": {"train": 20, "val": 30, "test": 50, "seed": 0},
          "budget": {"iterations": 40, "rollout_n": 0}}
CLI = [sys.executable, "-m", "coalign"]


def ledger(run_dir: Path) -> list[dict[str, Any]]:
    """The decisions of a run: what a resumed run must reproduce (timings left out)."""
    with RunStore(run_dir, readonly=True) as store:
        return [{"step": t, "state": state, "config": rec.get("config"),
                 "value": rec.get("value"), "val_before": rec.get("val_before"),
                 "val_after": rec.get("val_after"), "reason": rec.get("reason")}
                for t, state, rec in store.steps()]


def exported(run_dir: Path) -> dict[str, Any]:
    """The exported system file, less the run dir it names as its source (each trial has its
    own dir; the step and validation score it came from stay in the comparison)."""
    out = run_dir.parent / f"{run_dir.name}-system.json"
    subprocess.run([*CLI, "export", str(run_dir), "--out", str(out)], check=True,
                   capture_output=True, cwd=ROOT)
    system = json.loads(out.read_text())
    system["source"].pop("run_dir")
    return system


def run_killed(cmd: list[str], after_s: float) -> bool:
    """Run ``cmd``, SIGKILL it after ``after_s``; True if it was killed (not already done)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        proc.wait(timeout=after_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True
    if proc.returncode != 0:
        raise SystemExit(f"error: {' '.join(cmd)} failed: {proc.stderr.read().decode()[-500:]}")
    return False


def after_kill(cfg: Path, run_dir: Path) -> list[str]:
    """What a user runs after a kill: ``resume``, or ``optimize`` again when the process died
    before it stored its run config (``resume`` refuses such a dir and says so)."""
    stored = None
    if (run_dir / DB_NAME).exists():
        with RunStore(run_dir, readonly=True) as store:
            stored = store.get_meta("run_config")
    if stored is None:
        return [*CLI, "optimize", str(cfg), "--run-dir", str(run_dir)]
    return [*CLI, "resume", str(run_dir)]


def has_demos(config: Any) -> bool:
    """Some text value of ``config`` (a ledger row's JSON config) carries demos."""
    if isinstance(config, dict):
        return bool(config.get("demos")) or any(has_demos(v) for v in config.values())
    if isinstance(config, list):
        return any(has_demos(v) for v in config)
    return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--kills", type=int, default=2, help="kills per trial (at most)")
    ap.add_argument("--seed", type=int, default=0, help="seeds the kill moments")
    add_json_option(ap)
    args = ap.parse_args()
    commit = head_commit()
    rng = random.Random(f"kill-resume:{args.seed}")
    with tempfile.TemporaryDirectory(prefix="coalign-kill-") as tmp:
        cfg = Path(tmp) / "run.json"
        cfg.write_text(json.dumps(CONFIG))
        ref_dir = Path(tmp) / "reference"
        t0 = time.perf_counter()
        subprocess.run([*CLI, "optimize", str(cfg), "--run-dir", str(ref_dir)], check=True,
                       capture_output=True, cwd=ROOT)
        wall = time.perf_counter() - t0
        reference, ref_system = ledger(ref_dir), exported(ref_dir)
        accepted = [r for r in reference if r["state"] == "accepted"]
        demos = any(has_demos(r["config"]) for r in accepted)
        print(f"reference: {len(reference)} steps, {len(accepted)} accepted "
              f"({'with' if demos else 'without'} demos), {wall:.1f} s")
        trials = []
        for i in range(args.trials):
            run_dir = Path(tmp) / f"trial{i}"
            moments, cmd = [], [*CLI, "optimize", str(cfg), "--run-dir", str(run_dir)]
            for _ in range(args.kills):
                after = rng.uniform(0.05, 0.95) * wall
                if not run_killed(cmd, after):
                    break
                moments.append(round(after, 2))
                cmd = after_kill(cfg, run_dir)
            subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
            same = ledger(run_dir) == reference and exported(run_dir) == ref_system
            trials.append({"killed_after_s": moments, "identical": same})
            print(f"trial {i}: killed after {moments} s, identical: {same}")
    n_same = sum(t["identical"] for t in trials)
    print(f"{n_same}/{len(trials)} identical to the uninterrupted run")
    if args.json:
        write_result(args.json, {"config": CONFIG, "reference_wall_s": wall,
                                 "reference_steps": len(reference),
                                 "reference_accepted": len(accepted),
                                 "accepted_with_demos": demos, "trials": trials,
                                 "identical": n_same}, commit=commit)


if __name__ == "__main__":
    main()
