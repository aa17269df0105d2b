"""``coalign table build | pin | status | subset``: replay tables of a benchmark's candidate
space."""

from __future__ import annotations

import json
import math
import signal
from dataclasses import asdict
from pathlib import Path

import typer

from coalign.cli._app import app
from coalign.cli._endpoint import RAY
from coalign.errors import ConfigError

table_app = typer.Typer(help="Replay tables: build them once, replay with zero LLM calls.",
                        no_args_is_help=True)
app.add_typer(table_app, name="table")


@table_app.command("build")
def build_cmd(
    directory: Path = typer.Argument(..., help="table directory holding space.json"),
    minutes: float = typer.Option(None, help="stop cleanly after this many minutes"),
    limit: int = typer.Option(None, min=1, help="build at most this many more questions"),
    seal_every: int = typer.Option(5, min=1, help="seal a shard every N finished questions"),
    part: str = typer.Option("0/1", help="I/N: build only every N-th question from the I-th "
                             "(N processes share a build)"),
    # greedy, as the committed tables are built (docs/tables.md: the samples level costs ~7x)
    level: str = typer.Option("greedy", help="greedy (every config's outputs) or samples "
                              "(also the temperature samples rollouts draw)"),
    ray: str = RAY,
    workers: int = typer.Option(None, min=1, help="with --ray: actors (model replicas) per "
                                "model, each expanding one question at a time (default 2)"),
    reuse: list[Path] = typer.Option([], help="a table built with chunk-aligned prefix reuse "
                                     "(same system, model and options) whose identical "
                                     "requests are copied in instead of called; repeatable"),
) -> None:
    """Extend the table; kill it at any moment and rerun: no LLM call is repeated."""
    from coalign.executors import ExecutorSpec, make_executor
    from coalign.tables import build_table

    # SIGTERM (and SIGINT, which a shell ignores in background jobs) seal the journal on the
    # way out, after the LLM call in flight returns; SIGKILL leaves it for the next build
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _interrupt)

    def progress(done, n_done: int, total: int) -> None:
        typer.echo(f"{done.question}: {done.paths} paths, {done.llm_calls} calls, "
                   f"{done.llm_s:.0f} s LLM  ({n_done}/{total} questions)")

    if minutes is not None and not 0 < minutes < math.inf:
        raise ConfigError(f"--minutes must be a finite number > 0 (got {minutes})")
    i, _, n = part.partition("/")
    if not (i.isdigit() and n.isdigit()):
        raise ConfigError(f"--part {part!r}: expected I/N, e.g. 0/2")
    if workers is not None and ray is None:  # one process holds one replica per model
        raise ConfigError("--workers sets the Ray actors per model and needs --ray; without "
                          "it run N builds with --part I/N")
    try:
        with make_executor(ExecutorSpec(ray=ray), workers or 2) as executor:
            report = build_table(directory, level=level, part=(int(i), int(n)),
                                 minutes=minutes, limit=limit, seal_every=seal_every,
                                 on_question=progress, executor=executor, reuse=reuse)
    except KeyboardInterrupt:
        typer.echo("stopped: the journal is sealed; rerun to go on", err=True)
        raise typer.Exit(130) from None
    reused = f", {report.reused} responses copied from --reuse tables" if reuse else ""
    typer.echo(f"built {report.built_now} question(s) now, {report.llm_calls} LLM calls"
               f"{reused}, {report.llm_s / 3600:.2f} LLM hours; {report.done}/{report.total} "
               f"done; {len(report.shards_written)} new shard(s)")


@table_app.command("pin")
def pin_cmd(
    directory: Path = typer.Argument(..., help="table directory holding space.json"),
    tries: int = typer.Option(5, min=1, help="walks of a question before it is left unpinned"),
    minutes: float = typer.Option(None, help="stop cleanly after this many minutes"),
    limit: int = typer.Option(None, min=1, help="pin at most this many more questions"),
) -> None:
    """Record the sandbox outcomes of a table built before builds kept them, so its replay
    reads them instead of rerunning code near a time limit; kill it and rerun at any moment."""
    from coalign.tables import pin_table

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _interrupt)
    if minutes is not None and not 0 < minutes < math.inf:
        raise ConfigError(f"--minutes must be a finite number > 0 (got {minutes})")
    try:
        report = pin_table(directory, tries=tries, minutes=minutes, limit=limit,
                           on_question=lambda q, i, n: typer.echo(f"{q} pinned ({i}/{n})"))
    except KeyboardInterrupt:
        typer.echo("stopped: pinned questions are sealed; rerun to go on", err=True)
        raise typer.Exit(130) from None
    typer.echo(f"pinned {report.pinned_now} question(s) now, {report.outcomes} outcomes; "
               f"{report.pinned}/{report.finished} finished questions pinned")
    if report.retried:
        typer.echo(f"walked again (a run ended otherwise than at build time): "
                   f"{', '.join(report.retried)}")
    for question, n in report.unreached.items():
        typer.echo(f"{question}: {n} stored response(s) no walk reached (a build killed "
                   "mid-question can leave some)")
    if report.failed:
        typer.echo(f"left unpinned, every walk asked a request outside the table: "
                   f"{', '.join(report.failed)}", err=True)
        raise typer.Exit(1)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@table_app.command("status")
def status_cmd(
    directory: Path = typer.Argument(..., help="table directory"),
    json_out: bool = typer.Option(False, "--json", help="print the status as JSON"),
) -> None:
    """Done / total questions and paths, LLM calls and hours so far, and an ETA."""
    from coalign.tables import Table

    status = Table(directory).status()
    if json_out:
        typer.echo(json.dumps(asdict(status), indent=1))
        return
    for line in status.lines():
        typer.echo(line)


@table_app.command("subset")
def subset_cmd(
    source: Path = typer.Argument(..., help="table directory to read"),
    target: Path = typer.Argument(..., help="new table directory (must not exist or be empty)"),
    questions: int = typer.Option(0, min=0, help="the first N finished questions in pool "
                                  "order (0: every finished one)"),
    level: str = typer.Option("greedy", help="greedy or samples: finished at this level"),
) -> None:
    """A table of the finished questions only: run the loop on a table still building."""
    from coalign.tables import subset_table

    table = subset_table(source, target, questions=questions or None, level=level)
    for line in table.status().lines():
        typer.echo(line)
