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
                    "Local reward alignment", "Quality against cost of the validated configs",
                    "Per-instance choices: where the inputs went",
                    "Final configuration", "Example answers on validation"):
        assert f"<h2>{heading}</h2>" in page
    # drawn from what the store holds; the rest is a one-line note saying why it is not
    for chart in ("anytime", "costs", "alignment"):
        assert f'<figure class="chart" id="chart-{chart}"><svg' in page
    for chart in ("step-tests", "front", "routing"):
        assert f'<p class="muted absent" id="no-chart-{chart}">Not drawn: ' in page
    assert page.count('<tr class="accepted"') == 2 and page.count('<tr class="rejected"') == 1
    assert page.count('<tr class="skipped"') == 1  # step 3 proposed nothing: not a rejection
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


def test_intervals_skipped_steps_and_few_pairs_are_on_the_page(tmp_path) -> None:
    from tests.test_report_support import populate_charts

    populate_charts(tmp_path)
    page = write_report(tmp_path).read_text(encoding="utf-8")
    assert "1 rejected by the gate, 1 skipped: nothing validated" in page
    assert "95% paired bootstrap interval): +0.5000 [+0.5000, +0.5000]</li>" in page
    assert page.count('<div class="interval muted">Δ +') == 2  # the two accepted steps
    # 7 held-out pairs is under the loop's threshold (10): its figure is marked
    assert page.count('<span class="few">too few pairs: not meaningful</span>') == 1
    assert "[0.159, 0.751]" in page and "0.430 [0.16, 0.75] on 7 pairs, too few" in page
    assert ">pairwise accuracy (too few pairs: not meaningful)</text>" in page  # chart legend


def test_quality_against_cost_chart_or_one_line(tmp_path) -> None:
    from tests.test_report_support import populate_charts

    populate_charts(tmp_path / "costs")
    page = write_report(tmp_path / "costs").read_text(encoding="utf-8")
    chart = re.search(r'<figure class="chart" id="chart-front">(.*?)</figure>', page, re.S)[1]
    assert ">non-dominated front<" in chart and chart.count("<polyline") == 1
    assert "after step 2 (accepted): validation" in chart and "1.500 model s per query" in chart
    assert ">start (unoptimized)<" in chart and ">final config<" in chart
    populate(tmp_path / "free")  # traces with no model seconds: no chart, one line
    page = write_report(tmp_path / "free").read_text(encoding="utf-8")
    assert ('<p class="muted absent" id="no-chart-front">Not drawn: this run records no cost '
            "per query") in page and 'id="chart-front"' not in page


def test_control_characters_from_model_text_are_shown_escaped(tmp_path) -> None:
    # every C0 control but tab and newline, and DEL, in a prompt, an answer and a chart name;
    # CR stays as it is: a browser shows it as a line end (``_escape``), nothing is hidden
    hostile = "".join(chr(c) for c in [*range(0x20), 0x7F] if chr(c) not in "\t\n")
    keys = populate(tmp_path)
    from tests.test_report_support import _trace

    with RunStore(tmp_path, create=False) as store:
        store.put_trace("val", _trace("e1", keys["step2"], f"ans{hostile}", 0.5))
        (t, state, rec), = [s for s in store.steps() if s[0] == 3]
        rec["config"]["answer"]["prompt"]["instruction"] = f"say{hostile}"
        store.put_step(t, state, rec)
        store.set_meta("lrf_alignment", {f"comp{hostile}": {"pairs": 12, "accuracy": 0.6}})
    page = write_report(tmp_path).read_bytes().decode("utf-8")  # CR kept as written
    assert not (set(hostile) - {"\r"}) & set(page)
    shown = "".join(c if c == "\r" else "\u2421" if c == "\x7f" else chr(0x2400 + ord(c))
                    for c in hostile)
    assert f'<pre class="instruction">say{shown}</pre>' in page  # the final prompt, in full
    # one-line summaries fold each run of whitespace controls (VT, FF, CR, FS-US) into a space;
    # the rest show as control pictures, in table cells and in the alignment chart's SVG text
    seen = "".join(c if c == " " else "\u2421" if c == "\x7f" else chr(0x2400 + ord(c))
                   for c in " ".join(hostile.split()))
    assert f'<td class="text">ans{seen}</td>' in page
    assert re.search(f"<text[^>]*>comp{seen}", page)
