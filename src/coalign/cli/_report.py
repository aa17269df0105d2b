"""``coalign report RUN_DIR``: write the run's self-contained HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from coalign.cli._app import app, fail
from coalign.errors import CoalignError


@app.command("report")
def report_cmd(
    run_dir: Annotated[Path, typer.Argument(help="Run directory of coalign optimize.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="HTML file to write (default RUN_DIR/report.html).")
    ] = None,
) -> None:
    """Write an HTML report: score over iterations, step and cost ledgers, final prompts."""
    from coalign.report import write_report  # keeps `coalign --help` light

    try:
        path = write_report(run_dir, out)
    except CoalignError as exc:
        fail(str(exc))
    typer.echo(f"wrote {path}")
