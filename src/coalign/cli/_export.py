"""``coalign export RUN_DIR --out system.json``: the optimized system out of a run dir."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.text import Text

from coalign.cli._app import app

console = Console()


@app.command("export")
def export_cmd(
    run_dir: Path = typer.Argument(..., help="run dir made by coalign optimize"),
    out: Path = typer.Option(Path("system.json"), "--out", help="system file to write"),
    cascade: int = typer.Option(0, "--cascade", min=0, metavar="N",
                                help="add up to N fallback configs, run per input where the "
                                     "output fails its checks (docs/cascade.md)"),
) -> None:
    """Write the run's final config (and each selector's reward model beside it); evaluate it
    with 'coalign evaluate SYSTEM --config FILE'."""
    from coalign.export import export_run
    from coalign.job import fit_run_cascade

    doc = export_run(run_dir, out, fit_run_cascade(run_dir, cascade) if cascade else None)
    score = doc["source"]["val_score"]
    shown = f"{score:.4f}" if isinstance(score, int | float) else "not recorded"
    console.print(Text(f"wrote {out}: {doc['system']} after step {doc['source']['step']} "
                       f"(validation {shown})"))
    for slot, sel in doc["selectors"].items():
        console.print(Text(f"  {slot}: chosen per input by the reward model in "
                           f"{out.parent / sel['reward_model']} (digest {sel['digest'][:16]})"))
    if "cascade" in doc:
        c = doc["cascade"]
        console.print(Text(f"  cascade: {len(c['configs']) - 1} fallback(s) of "
                           f"{c['candidates'] - 1} validated configs; validation (in-sample) "
                           f"{c['val_single']:.4f} -> {c['val_cascade']:.4f}, "
                           f"{c['escalated']:.0%} of inputs escalated, "
                           f"{c['cost_ratio']:.2f}x the model seconds "
                           f"({c['rerun_cost_ratio']:.2f}x rerunning only what a fallback "
                           "changes)"))
