"""The Typer application and the error policy shared by every command."""

from __future__ import annotations

import sys

import typer

try:  # typer 0.2x carries its own copy of click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer runs on click itself
    from click import exceptions as click_errors

from coalign.errors import CoalignError

app = typer.Typer(
    name="coalign",
    help="Optimize compound AI systems with locally aligned rewards.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"coalign {version('coalign')}")
        except PackageNotFoundError:  # imported from a source tree that was never installed
            from coalign import __version__

            typer.echo(f"coalign {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_print_version,
                                       is_eager=True, help="Print the version and exit.")) -> None:
    """Optimize compound AI systems with locally aligned rewards."""


class UsageError(Exception):
    """Bad user input: printed as one line, exit code 2."""


def fail(message: str) -> None:
    """Print a one-line error and exit with code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


def note(message: str) -> None:
    """One line on stderr: a setting overridden by another, or one that has no effect."""
    typer.echo(f"note: {message}", err=True)


def main() -> None:
    try:
        # not standalone: click hands its errors over instead of printing a usage box
        code = app(standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:
        exc.show()  # a bare command group: its help, as always
        sys.exit(exc.exit_code)
    except click_errors.UsageError as exc:  # a mistyped command, flag or value: one line too
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        typer.echo(f"error: {' '.join(exc.format_message().split())}{hint}", err=True)
        sys.exit(2)
    except click_errors.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        sys.exit(1)
    except (UsageError, CoalignError) as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)  # typer.Exit(n) comes back as n
