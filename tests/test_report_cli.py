"""``coalign report`` through the Typer app, and the written page loaded in headless Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import typer
import typer.core
from typer.testing import CliRunner

import coalign.cli._report  # noqa: F401  (registers the command)
from coalign.cli._app import app
from coalign.store import RunStore
from tests.test_report_support import ANSWER_INJECT, DEMO, INJECT, populate

CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser",
                                                 "google-chrome"))), None)
# Executed, this payload would leave a mark in the DOM that --dump-dom shows.
PWN = "<script>document.documentElement.setAttribute('data-pwned','1')</script>"
PWN_IMG = "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','2')\">"


def run(*args: object):
    group = isinstance(typer.main.get_command(app), typer.core.TyperGroup)
    return CliRunner().invoke(app, (["report"] if group else []) + [str(a) for a in args])


def test_cli_writes_default_report(tmp_path) -> None:
    populate(tmp_path)
    result = run(tmp_path)
    assert result.exit_code == 0, result.output
    out = tmp_path / "report.html"
    assert result.output.strip() == f"wrote {out}"
    assert "<h2>Step ledger</h2>" in out.read_text(encoding="utf-8")


def test_cli_out_option(tmp_path) -> None:
    populate(tmp_path / "run")
    result = run(tmp_path / "run", "--out", tmp_path / "x.html")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "x.html").exists() and not (tmp_path / "run" / "report.html").exists()


@pytest.mark.parametrize("kind", ["missing", "not_a_run", "garbage"])
def test_cli_bad_run_dir_is_one_line_exit_2(tmp_path, kind) -> None:
    target = tmp_path / "nope"
    if kind == "not_a_run":
        target.mkdir()
    elif kind == "garbage":
        target.mkdir()
        (target / "run.sqlite").write_bytes(b"this is not a database" * 100)
    result = run(target)
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and result.output.count("\n") == 1
    assert "nope" in result.output
    assert kind != "missing" or not target.exists()  # reading never creates the directory


def test_cli_unwritable_out_is_one_line_exit_2(tmp_path) -> None:
    populate(tmp_path)
    result = run(tmp_path, "--out", tmp_path / "no" / "dir" / "r.html")
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert result.output.startswith("error: report: cannot write")


class _Dom(HTMLParser):
    """Tags, attributes and the text of each table row of a dumped DOM."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.rows: list[tuple[str, str]] = []  # (class, text)
        self.text: list[str] = []
        self._row: list[str] | None = None
        self._row_cls = ""

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self._row, self._row_cls = [], dict(attrs).get("class") or ""

    def handle_endtag(self, tag) -> None:
        if tag == "tr" and self._row is not None:
            self.rows.append((self._row_cls, " ".join(self._row)))
            self._row = None

    def handle_data(self, data) -> None:
        self.text.append(data)
        if self._row is not None and data.strip():
            self._row.append(data.strip())


def dump_dom(path: Path, profile: Path) -> _Dom:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update", "--no-first-run",
           "--disable-sync", f"--user-data-dir={profile}", "--dump-dom", path.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "<html" in proc.stdout, proc.stderr[-2000:]
    dom = _Dom()
    dom.feed(proc.stdout)
    return dom


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed "
                    "(Debian: apt-get install -y chromium)")
def test_browser_renders_rows_and_runs_no_injected_script(tmp_path) -> None:
    populate(tmp_path / "run")
    with RunStore(tmp_path / "run", create=False) as store:  # add payloads that would mark the DOM
        store.set_meta("run_config", {"note": PWN + PWN_IMG})
    page = tmp_path / "run" / "report.html"
    assert run(tmp_path / "run").exit_code == 0
    dom = dump_dom(page, tmp_path / "profile")
    tags = [t for t, _ in dom.tags]
    assert "script" not in tags and "img" not in tags
    assert not any("data-pwned" in attrs for _, attrs in dom.tags)
    rows = dom.rows
    # step 3 proposed no change: skipped, not rejected (as coalign optimize prints it)
    decisions = [(c, text.split()[1]) for c, text in rows
                 if c in ("accepted", "rejected", "skipped")]
    assert decisions == [("accepted", "accepted"), ("rejected", "rejected"),
                         ("accepted", "accepted"), ("skipped", "skipped")]
    phases = [text.split()[0] for c, text in rows if c == "phase"]
    assert phases == ["lrf_train", "adapt", "validation", "local_search"]
    assert ("total", "total 323.33 830 52") in rows
    text = "".join(dom.text)
    # Shown to the reader as text, not parsed as markup (the run config is shown as JSON).
    for raw in (INJECT, DEMO["question"], ANSWER_INJECT, json.dumps(PWN + PWN_IMG)):
        assert raw in text
    assert tags.count("svg") == 3  # the anytime curve, the cost and the alignment bars


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed "
                    "(Debian: apt-get install -y chromium)")
def test_browser_harness_detects_an_executed_script(tmp_path) -> None:
    # Control: the same payload in an unescaped page does run, so the check above can fail.
    page = tmp_path / "unsafe.html"
    page.write_text(f"<!DOCTYPE html><html><body><p>{PWN}</p></body></html>", encoding="utf-8")
    dom = dump_dom(page, tmp_path / "profile")
    assert any(attrs.get("data-pwned") == "1" for _, attrs in dom.tags)

