"""``coalign search`` input errors: one line, exit code 2, before any model call."""

from __future__ import annotations

import typer
import typer.core
from typer.testing import CliRunner

import coalign.cli._search  # noqa: F401  (registers the command)
from coalign.cli._app import app
from coalign.search import SearchState, SearchStore


def run(*args: str):
    group = isinstance(typer.main.get_command(app), typer.core.TyperGroup)
    return CliRunner().invoke(app, (["search"] if group else []) + list(map(str, args)))


def one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_limits_must_be_ordered(tmp_path):
    msg = one_line_error(
        run("--out", tmp_path / "r", "--stagnation-limit", "3", "--convergence-limit", "3")
    )
    assert "convergence_limit" in msg and "--convergence-limit" in msg


def test_unknown_task(tmp_path):
    msg = one_line_error(run("--out", tmp_path / "r", "--task", "mnist"))
    assert "--task" in msg and "pubmedqa" in msg


def test_resume_with_other_settings_refused(tmp_path):
    SearchStore(tmp_path / "r").save(SearchState(fingerprint="someone-else"))
    msg = one_line_error(run("--out", tmp_path / "r"))
    assert "different configuration" in msg


def test_more_questions_than_data(tmp_path):
    msg = one_line_error(run("--out", tmp_path / "r", "--n-dev", "400", "--n-pool", "400"))
    assert "exceed" in msg
