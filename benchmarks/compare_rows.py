"""The rows a ``compare.py`` run has finished, and the paired differences between them.

A row is kept twice: in the run dir's store (so a resumed run reuses it) and in a results file
under ``benchmarks/results/compare/`` that is committed with the code. A full benchmark takes
more hours than a session and run dirs do not outlive the machine, so the committed file is what
lets the next session pick up the remaining methods (their budget is coalign's row) and pair
their per-question test scores with the rows already measured.
"""

from __future__ import annotations

import fcntl
import json
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._results import ROOT, git, write_json
from coalign.optimize import paired_bootstrap

RESULTS_DIR = ROOT / "benchmarks" / "results" / "compare"


def code_version() -> str | None:
    """The commit the rows were measured on ("+dirty" with uncommitted changes), if git knows."""
    head = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--", "src", "benchmarks/compare.py",
                "benchmarks/compare_rows.py")
    if head is None or dirty is None:
        return None
    return head + ("+dirty" if dirty else "")


class SavedRows:
    """One system/seed/config's finished rows in a results file (``None`` dir: kept nowhere)."""

    def __init__(self, results_dir: Path | None, name: str) -> None:
        self.path = None if results_dir is None else results_dir / f"{name}.json"

    def rows(self) -> dict:
        if self.path is None or not self.path.exists():
            return {}
        try:
            return json.loads(self.path.read_text())["rows"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise SystemExit(f"{self.path}: not a compare results file ({exc})") from None

    def get(self, method: str) -> dict | None:
        return self.rows().get(method)

    def put(self, method: str, row: dict) -> None:
        """Add one row; read-modify-write under a file lock (two processes may run two methods
        of one seed), replaced atomically so a kill never leaves half a file."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            rows = self.rows()
            rows[method] = row
            write_json(self.path, {"name": self.path.stem, "rows": rows}, indent=1)


def stored_row(store, saved: SavedRows, method: str) -> dict | None:
    """A finished row from the run store or, failing that, the results file (then copied into
    the store); a row only the store has is copied into the results file."""
    row, kept = store.get_meta(f"compare:{method}"), saved.get(method)
    if row is None and kept is not None:
        store.set_meta(f"compare:{method}", kept)
        return kept
    if row is not None and kept is None:
        saved.put(method, row)
    return row


def finished(store, saved: SavedRows, method: str, run: Callable[[], dict]) -> dict:
    """A method's row, measured once: a resumed benchmark (or a later session, through the
    results file) reuses finished rows instead of replaying them from the response cache, which
    would also replace their wall time."""
    row = stored_row(store, saved, method)
    if row is None:
        t0 = time.perf_counter()
        row = run()
        row.setdefault("wall_s", time.perf_counter() - t0)
        row.setdefault("code", code_version())
        store.set_meta(f"compare:{method}", row)
        saved.put(method, row)
        print(f"{store.run_dir.name}: {row_line(method, row)}", flush=True)
    return row


def with_differences(out: dict, seed: int) -> dict:
    """Every method against the unoptimized system, and coalign against every other method,
    each paired over the same test questions (a skipped method has no scores: no difference)."""
    coalign = out["coalign"]
    for method, row in out.items():
        if method == "unoptimized" or "scores" not in row:
            continue
        row.setdefault("diff_vs_unoptimized", diff(row["scores"], out["unoptimized"]["scores"],
                                                   seed))
        if method != "coalign":
            coalign.setdefault("diff_vs", {})[method] = diff(coalign["scores"], row["scores"],
                                                             seed)
    return out


def diff(new: list[float], old: list[float], seed: int) -> dict:
    """Mean paired difference with its bootstrap 95% interval over test questions, and the
    bootstrap probability that ``new`` is the better one."""
    mean, lo, hi, p_better = paired_bootstrap(new, old, seed=seed)
    return {"mean": mean, "ci95": [lo, hi], "p_better": p_better}


def merge_seeds(per_seed: list[dict]) -> dict:
    """Each method's figures averaged over the seeds that have its row; the rows are kept."""
    merged = {}
    for method in dict.fromkeys(m for rows in per_seed for m in rows):
        rows = [r[method] for r in per_seed if method in r]
        merged[method] = {k: sum(r[k] for r in rows) / len(rows)
                          for k in ("test_metric", "equiv_runs", "llm_calls", "wall_s")}
        merged[method]["per_seed"] = rows
    return merged


def progress(store, method: str, budget: float):
    """An ``on_trial`` callback that keeps a running baseline's progress in the run store, for
    ``--status`` (a resumed baseline counts again from its replayed trials)."""
    state: dict = {"configs": 0, "updates": 0, "best_val": None, "budget_runs": budget}

    def on_trial(label: str, score: float, equiv_runs: float) -> None:
        if label.startswith("update "):  # a REINFORCE minibatch: a train score, not a val one
            state["updates"] += 1
        else:
            state["configs"] += 1
            state["best_val"] = score if state["best_val"] is None else max(score,
                                                                           state["best_val"])
        state["equiv_runs"] = equiv_runs
        store.set_meta(f"progress:{method}", state)
    return on_trial


def progress_line(method: str, p: dict) -> str:
    best = f" (best val {p['best_val']:.3f})" if p["configs"] else ""
    updates = f"{p['updates']} policy updates, " if p["updates"] else ""
    return (f"  {method} running: {updates}{p['configs']} configs scored{best}, "
            f"{p['equiv_runs']:.0f}/{p['budget_runs']:.0f} equiv runs")


def row_line(method: str, row: dict) -> str:
    return (f"{method} test {row['test_metric']:.3f}, {row['equiv_runs']:.1f} equiv runs, "
            f"{row['llm_calls']} LLM requests, {row['wall_s']:.0f} s"
            + (" (since a resume)" if row.get("resumed") else ""))


def versus_line(method: str, d: dict) -> str:
    return (f"  coalign - {method}: {d['mean']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}], "
            f"P(coalign better) {d['p_better']:.2f}")
