"""The demo's second part: coalign against the other optimizers on the committed replay tables.

Every LLM output of a table was computed once and committed (``benchmarks/tables``), so this
part makes no LLM call: each method runs on a few seeds' splits of the table's questions at a
few budgets, and the page shows each method's mean test metric and writes the anytime curve.
The full comparison (20 seeds) is ``benchmarks/replay_compare.py``; its committed results are
in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

SEEDS = (0, 1)
BUDGETS = (250.0, 500.0, 1000.0)
SPLIT = (0.2, 0.3, 0.5)  # train / val / test shares of the questions, as replay_compare's


def show_replay_comparison(console: Console, out_dir: Path,
                           tables: Sequence[Path] | None = None,
                           seeds: Sequence[int] = SEEDS,
                           budgets: Sequence[float] = BUDGETS) -> list[Path]:
    """Compare the methods on each finished table; print a table per system, write its
    anytime curve under ``out_dir``, and return the curves written."""
    from coalign.compare import (
        METHODS,
        Lookup,
        anytime_svg,
        coalign_method,
        compare,
        split_sizes,
        weights_methods,
    )
    from coalign.tables import ReplayMiss, Table, find_tables

    tables = find_tables() if tables is None else list(tables)
    written: list[Path] = []
    if not tables:
        console.print(Text("replay comparison: no replay tables here (they live in the "
                           "repository's benchmarks/tables)", style="dim"))
        return written
    for directory in tables:
        table = Table(directory)
        finished = table.finished()
        if len(finished) < len(table.space.questions):
            console.print(Text(f"replay comparison: {directory} is still building "
                               f"({len(finished)} of {len(table.space.questions)} questions); "
                               "skipped", style="dim"))
            continue
        t0 = time.perf_counter()
        try:
            rewards = table.rewards()
        except ReplayMiss as exc:  # one table that does not replay must not end the demo
            console.print(Text(f"replay comparison: {directory} skipped: {exc}", style="dim"))
            continue
        lookup = Lookup.of_table(rewards, table.space)
        n = len(rewards.questions)
        sizes = split_sizes(n, SPLIT)
        # a system with a trainable decider: the baselines search its weights too
        methods = {"coalign": (coalign_method(directory, rewards.questions), True), **METHODS,
                   **weights_methods(directory)}
        result = compare(lookup, sizes=sizes, seeds=list(seeds), budgets=budgets,
                         methods=methods, workers=2)
        metric = table.space.task().metric_name
        name = Path(directory).name  # two tables of one system keep a curve each
        out_dir.mkdir(parents=True, exist_ok=True)
        curve = out_dir / f"anytime-{name}.svg"
        curve.write_text(anytime_svg(result, metric=metric,
                                     title=f"{name}: test {metric} by budget, "
                                           f"{len(seeds)} seeds"))
        written.append(curve)
        console.print(_table(result, lookup, name, metric, n, sizes,
                             time.perf_counter() - t0))
        console.print(Text(f"anytime curve: {curve}"))
    return written


def _table(result, lookup, name: str, metric: str, n: int, sizes: Sequence[int],
           seconds: float) -> RichTable:
    from coalign.compare import REFERENCES

    out = RichTable(title=Text(f"{name} replay table: test {metric}, mean of "
                               f"{len(result.seeds)} seeds ({n} questions, split "
                               f"{'/'.join(map(str, sizes))}; {seconds:.0f} s, no LLM call)"))
    out.add_column("method")
    for b in result.budgets:
        out.add_column(f"{b:g} runs", justify="right")
    for method in result.scores:
        style = "dim" if method in REFERENCES else None
        out.add_row(Text(method, style=style),
                    *(Text(f"{result.summary(method, b)['mean']:.3f}", style=style)
                      for b in result.budgets))
    out.add_row(Text("coalign − best baseline [95%]", style="bold"),
                *(_versus_best(result, lookup, b) for b in result.budgets))
    return out


def _versus_best(result, lookup, budget: float) -> Text:
    """coalign minus the baseline with the best mean at ``budget``, paired over the seeds'
    test questions (two seeds say nothing as a sample of seeds; the committed 20-seed files
    are in benchmarks/results/replay)."""
    best = result.best_baseline(budget)
    d = None if best is None else result.paired_by_question(lookup, "coalign", best, budget)
    if d is None:
        return Text("–")
    style = "green" if d["lo"] > 0 else "red" if d["hi"] < 0 else None
    return Text(f"{d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]", style=style)
