"""The Typer application and the error policy shared by every command."""

from __future__ import annotations

import sys

import typer

from coalign.errors import CoalignError

app = typer.Typer(
    name="coalign",
    help="Optimize compound AI systems with locally aligned rewards.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class UsageError(Exception):
    """Bad user input: printed as one line, exit code 2."""


def fail(message: str) -> None:
    """Print a one-line error and exit with code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


def main() -> None:
    try:
        app()
    except (UsageError, CoalignError) as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
