"""Rendering: every stored string is escaped, the page is self-contained, gaps are stated."""

from __future__ import annotations

import os
import re
from html import escape

import pytest

from coalign.errors import StoreError
from coalign.report import build_report_data, render_chart, render_html, write_report
from coalign.report._data import CurvePoint
from coalign.store import RunStore
from tests.test_report_support import (
    ANSWER_INJECT,
    CANDIDATE_INJECT,
    DEMO,
    INJECT,
    populate,
)


@pytest.fixture
def page(tmp_path) -> str:
    populate(tmp_path)
    return write_report(tmp_path).read_text(encoding="utf-8")


def test_injected_text_only_appears_escaped(page) -> None:
    for raw in (INJECT, DEMO["question"], ANSWER_INJECT, CANDIDATE_INJECT):
        assert raw not in page
    assert escape(CANDIDATE_INJECT, quote=True) in page and "2 candidates by local reward" in page
    assert escape(INJECT, quote=True) in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
    assert escape(ANSWER_INJECT, quote=True) in page
    assert "&quot;quotes&quot; &amp; ampersands" in page
    assert "<script" not in page.lower() and "<img" not in page.lower()


def test_page_is_self_contained(page) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "<svg" in page and "<style>" in page


def test_page_holds_every_section_and_row(page) -> None:
    for heading in ("Anytime curve: f1 against cost",
                    "Test f1 before and after each accepted step", "Step ledger", "Cost ledger",
                    "Local reward alignment", "Per-instance choices: where the inputs went",
                    "Final configuration", "Example answers on validation"):
        assert f"<h2>{heading}</h2>" in page
    # drawn from what the store holds; the rest is a one-line note saying why it is not
    for chart in ("anytime", "costs", "alignment"):
        assert f'<figure class="chart" id="chart-{chart}"><svg' in page
    for chart in ("step-tests", "routing"):
        assert f'<p class="muted absent" id="no-chart-{chart}">Not drawn: ' in page
    assert page.count('<tr class="accepted"') == 2 and page.count('<tr class="rejected"') == 2
    assert page.count('<tr class="phase">') == 4
    assert re.search(r'<tr class="total"><td>total</td><td class="num">323\.33</td>'
                     r'<td class="num">830</td><td class="num">52</td></tr>', page)
    assert "<details><summary>1 demonstration(s)</summary>" in page
    assert "test f1: 0.3800 → 0.4700 on 200 examples" in page
    assert "Missing from this run store" not in page


def test_missing_parts_are_stated_on_the_page(tmp_path) -> None:
    RunStore(tmp_path).close()
    page = write_report(tmp_path).read_text(encoding="utf-8")
    assert "Missing from this run store" in page
    assert "No optimizer steps recorded." in page and "No cost ledger recorded." in page
    assert "unknown system" in page and "<svg" not in page


def test_chart_marks_accepted_and_rejected_points() -> None:
    svg = render_chart([CurvePoint(-1, 0.4, None, False), CurvePoint(0, 0.5, 0.5, True),
                        CurvePoint(1, 0.5, 0.45, False), CurvePoint(2, 0.5, None, False)])
    assert svg.count("accepted, validation score") == 1
    assert svg.count("rejected, validation score") == 1
    assert "<title>step 1: rejected, validation score 0.4500</title>" in svg
    assert "step (the cost of each step was not recorded)" in svg  # no runs: x is the step
    assert ">test score" not in svg  # no test score stored: no test series
    points = re.search(r'<polyline points="([^"]+)"', svg).group(1).split()
    assert len(points) == 1 + 2 * 3  # a step function: two corners per later point
    ys = [float(p.split(",")[1]) for p in points]
    assert ys[0] > ys[-1]  # the score went up, so the line ends higher (smaller y)
    assert render_chart([]) == ""


def test_anytime_chart_puts_cost_on_x_and_test_where_stored() -> None:
    points = [CurvePoint(-1, 0.4, None, False, 10.0, 0.3), CurvePoint(0, 0.5, 0.5, True, 14.0),
              CurvePoint(1, 0.5, 0.45, False, 16.0), CurvePoint(2, 0.6, 0.6, True, 19.0, 0.35),
              CurvePoint(3, 0.6, None, False, 20.0, 0.35)]
    svg = render_chart(points, "f1")
    assert "cost so far (equivalent full-system runs)" in svg
    assert ">f1 (mean over the split)<" in svg
    assert "<title>step 1, 16.0 runs spent: rejected, validation f1 0.4500</title>" in svg
    # step 0's test score is not stored: the known ones are drawn as dots, not joined
    assert svg.count(": test f1 ") == 2 and svg.count("<polyline") == 1
    whole = [CurvePoint(p.step, p.score, p.candidate, p.accepted, p.runs, p.test or 0.32)
             for p in points]
    svg = render_chart(whole, "f1")
    assert svg.count(": test f1 ") == 5 and svg.count("<polyline") == 2


def test_flat_single_point_chart_renders() -> None:
    svg = render_chart([CurvePoint(-1, 0.0, None, False)])
    assert "nan" not in svg and "inf" not in svg and svg.startswith("<svg")


def test_written_atomically_to_out_and_readable(tmp_path) -> None:
    populate(tmp_path / "run")
    out = tmp_path / "elsewhere" / "r.html"
    out.parent.mkdir()
    out.write_text("old")
    assert write_report(tmp_path / "run", out) == out
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert os.stat(out).st_mode & 0o777 == 0o644
    assert sorted(p.name for p in out.parent.iterdir()) == ["r.html"]  # no temp left behind


def test_unwritable_target_is_a_store_error(tmp_path) -> None:
    populate(tmp_path)
    with pytest.raises(StoreError, match="cannot write"):
        write_report(tmp_path, tmp_path / "no" / "such" / "dir.html")


def test_render_is_deterministic(tmp_path) -> None:
    populate(tmp_path)
    pages = []
    for _ in range(2):  # two separate reads of the store: no clock or ordering in the page
        with RunStore(tmp_path, create=False) as store:
            pages.append(render_html(build_report_data(store)))
    assert pages[0] == pages[1]
