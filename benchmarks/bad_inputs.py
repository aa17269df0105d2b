"""Bad-input probe: feeds malformed inputs to the real ``coalign`` command line and counts how
each one ends.

    python -m benchmarks.bad_inputs [--quick | --hostile] [--json results.json] [--only TEXT]

Families: run configs (``optimize``), system configs (``evaluate --config``), dataset files
(``evaluate --data FILE.jsonl``), preference pairs and contracts (``audit``,
``export-pairs``), run dirs and crafted run stores (``resume``, ``report``), and flags. Each
case runs ``python -m coalign ...`` in a fresh temp folder with a time limit, and ends as:

* ``one-line``: exit 2 and stderr exactly one line starting ``error: ``;
* ``traceback``: stderr holds a Python traceback;
* ``silent``: the bad input was accepted: exit 0, or the run went on to its first LLM call
  (the model is a sentinel file that is no GGUF model, so that call fails naming it, and no
  model is ever loaded), or ``optimize``/``resume`` printed that the job is open;
* ``other``: anything else (a multi-line error, another exit code, the time limit), or a
  case's own ``check`` failed (a key echoed, a report holding raw control characters);
* ``correct``: a legitimate input (a control) that was accepted, as it should be.

A case with a ``disk`` runs in a private mount namespace (``unshare``, util-linux) where its
``disk`` folder is a read-only bind mount or a full 64 KiB tmpfs; a temp file or a run store
left behind there is printed to stderr, which makes the case ``other``.

The target is no ``traceback``, ``silent`` or ``other``. ``--quick`` runs the first
cases of each family, ``--hostile`` only those of the second probe (issue 42). Nothing under
``benchmarks/tables/`` is written: the replay table there is only read.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks._results import write_result
from benchmarks.bad_inputs_cases import (
    DATASETS,
    FLAGS,
    ROOT,
    RUN_CONFIGS,
    SENTINEL,
    SYSTEM_CONFIGS,
    Case,
    Ctx,
)
from benchmarks.bad_inputs_hostile import HOSTILE_CASES
from benchmarks.bad_inputs_stores import PAIRS, RUN_DIRS

CASES: list[Case] = [*RUN_CONFIGS, *DATASETS, *SYSTEM_CONFIGS, *PAIRS, *RUN_DIRS, *FLAGS,
                     *HOSTILE_CASES]
OUTCOMES = ("one-line", "traceback", "silent", "other", "correct")
QUICK_PER_FAMILY = 4
TIMEOUT_S = 120
GRACE_S = 30
REACHED_MODEL = f"{SENTINEL} is not a GGUF file"  # the sentinel's error: input accepted


def quick_cases(cases: list[Case] = CASES, per_family: int = QUICK_PER_FAMILY) -> list[Case]:
    """The first ``per_family`` cases of each family, plus each family's first good case."""
    out: list[Case] = []
    for family in dict.fromkeys(c.family for c in cases):
        mine = [c for c in cases if c.family == family]
        out += mine[:per_family] + [c for c in mine[per_family:] if c.good][:1]
    return out


def classify(case: Case, rc: int | None, stdout: str, stderr: str) -> str:
    """The outcome of one run (``rc`` None: stopped by the probe, after ``case.marker`` or at
    the time limit)."""
    if "Traceback" in stderr:
        return "traceback"
    stopped = rc is None and case.marker is not None and case.marker in stdout
    accepted = (rc in case.ok_codes if case.good else rc == 0) or REACHED_MODEL in stderr \
        or stopped
    if case.good:
        return "correct" if accepted else "other"
    if accepted:
        return "silent"
    lines = [line for line in stderr.splitlines() if line.strip()]
    one_line = rc == 2 and len(lines) == 1 and lines[0].startswith("error: ")
    return "one-line" if one_line else "other"


# Mounts the case's disk folder ($2) as $1 says, runs the command, then names what it left
# behind there: temp files, or a run store (a half-made one is what a full disk used to leave).
DISK_SCRIPT = """
mode=$1 disk=$2; shift 2
if [ "$mode" = read-only ]; then
  mount --bind "$disk" "$disk" && mount -o remount,bind,ro "$disk" || exit 90
else
  mount -t tmpfs -o size=64k tmpfs "$disk" || exit 90
  free=0; [ "$mode" = nearly-full ] && free=4096
  head -c $((65536 - free)) /dev/zero > "$disk/.fill" 2>/dev/null
fi
"$@"; rc=$?
find "$disk" \\( -name '*.tmp' -o -name run.sqlite \\) -exec echo "left behind: {}" \\; >&2
exit $rc
"""


def command(case: Case, ctx: Ctx, args: list[str]) -> list[str]:
    coalign = [sys.executable, "-m", "coalign", *args]
    if case.disk is None:
        return coalign
    return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", DISK_SCRIPT, "sh",
            case.disk, str(ctx.disk), *coalign]


def run_case(case: Case, root: Path, index: int, timeout: float = TIMEOUT_S) -> dict:
    """Write the case's inputs under ``root``, run the command, classify how it ended."""
    ctx = Ctx(root, f"{index:03d}")
    args = case.make(ctx)
    out, err = ctx.dir / "stdout.txt", ctx.dir / "stderr.txt"
    # the data next to this checkout, also for a coalign imported from elsewhere (PYTHONPATH);
    # an unreachable MLflow server is reported at once, not after minutes of retries
    env = {"COALIGN_DATA_DIR": str(ROOT.parent / "shared" / "data"), **os.environ,
           "COLUMNS": "200", "NO_COLOR": "1", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}
    t0 = time.perf_counter()
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(command(case, ctx, args), stdout=o, stderr=e,
                                stdin=subprocess.DEVNULL, cwd=ctx.dir, env=env,
                                start_new_session=True)
        rc: int | None = None
        seen: float | None = None  # when the marker appeared
        while (rc := proc.poll()) is None:
            now = time.perf_counter()
            if seen is None and case.marker and case.marker in out.read_text(errors="replace"):
                seen = now
            # an accepted run normally stops at the sentinel; one that fell back to a real
            # model is stopped GRACE_S after saying it started
            if now - t0 > timeout or (seen is not None and now - seen > GRACE_S):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
            time.sleep(0.1)
    stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
    first = next((line for line in stderr.splitlines() if line.strip()), "")

    def portable(text: str) -> str:
        return text.replace(str(root), "$TMP").replace(str(ROOT), "$REPO")
    outcome = classify(case, rc, stdout, stderr)
    if case.check is not None and outcome in ("one-line", "correct") \
            and not case.check(ctx, stdout, stderr):
        outcome = "other"
    disk = f" (disk {case.disk})" if case.disk else ""
    return {"name": case.name, "family": case.family, "good": case.good,
            "command": portable("coalign " + " ".join(args)) + disk,
            "exit_code": rc, "first_stderr_line": portable(first)[:300],
            "outcome": outcome,
            "seconds": round(time.perf_counter() - t0, 2)}


def summarize(results: list[dict]) -> dict:
    counts = Counter(r["outcome"] for r in results)
    by_family: dict[str, Counter] = {}
    for r in results:
        by_family.setdefault(r["family"], Counter())[r["outcome"]] += 1
    return {"tried": len(results), "bad": sum(not r["good"] for r in results),
            "good": sum(r["good"] for r in results),
            **{k: counts.get(k, 0) for k in OUTCOMES},
            "by_family": {f: {k: c.get(k, 0) for k in OUTCOMES} for f, c in by_family.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few cases per family")
    parser.add_argument("--json", type=Path, help="write every case and the counts here")
    parser.add_argument("--hostile", action="store_true",
                        help="only the cases of the second probe (issue 42)")
    parser.add_argument("--only", help="run only cases whose name contains this text")
    args = parser.parse_args()
    cases = quick_cases() if args.quick else HOSTILE_CASES if args.hostile else CASES
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    results = []
    with tempfile.TemporaryDirectory(prefix="coalign-bad-inputs-") as tmp:
        for index, case in enumerate(cases):
            result = run_case(case, Path(tmp), index)
            results.append(result)
            mark = "" if result["outcome"] in ("one-line", "correct") else "  <--"
            print(f"{result['outcome']:<9} {case.family:<13} {case.name:<45} "
                  f"{result['first_stderr_line'][:90]}{mark}", flush=True)
    summary = summarize(results)
    print(f"\n{'family':<14}" + "".join(f"{k:>10}" for k in OUTCOMES))
    for family, counts in summary["by_family"].items():
        print(f"{family:<14}" + "".join(f"{counts[k]:>10}" for k in OUTCOMES))
    print(f"{'total':<14}" + "".join(f"{summary[k]:>10}" for k in OUTCOMES))
    print(f"tried {summary['tried']} ({summary['bad']} bad, {summary['good']} good controls)")
    if args.json:
        write_result(args.json, {**summary, "cases": results}, indent=1)


if __name__ == "__main__":
    main()
