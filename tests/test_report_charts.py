"""The SVG chart primitives of the report: bars (``_bars``) and line styles (``_lines``)."""

from __future__ import annotations

import html
import re

import pytest

from coalign.report._bars import Bar, Segment, _ticks, bar_chart
from coalign.report._lines import SeriesPoint, SeriesStyle, fit_text, line_chart


def _rects(svg: str) -> list[tuple[float, float]]:
    """(x, width) of each bar segment (the white background excluded)."""
    return [(float(x), float(w)) for x, w in
            re.findall(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="18"', svg)]


def test_bar_chart_refuses_nothing_to_draw() -> None:
    with pytest.raises(ValueError, match="at least one bar"):
        bar_chart([], x_label="x")


def test_stacked_segments_are_proportional_and_share_a_colour_per_key() -> None:
    svg = bar_chart([Bar("phase a", (Segment("c1", 30.0), Segment("c2", 10.0))),
                     Bar("phase b", (Segment("c2", 20.0),))], x_label="runs")
    (a1, w1), (a2, w2), (b1, wb) = _rects(svg)
    assert a2 == pytest.approx(a1 + w1, abs=0.11) and w1 == pytest.approx(3 * w2, rel=0.02)
    assert b1 == a1 and wb == pytest.approx(2 * w2, rel=0.02)
    colours = re.findall(r'height="18" fill="(#[0-9a-f]+)"', svg)
    assert colours[1] == colours[2] != colours[0]
    assert ">c1</text>" in svg and ">c2</text>" in svg  # two keys: a legend


def test_round_ticks_unless_the_range_is_fixed() -> None:
    assert _ticks(0, 323.33, fixed=False) == [0, 100, 200, 300, 400]
    assert _ticks(0, 0.75, fixed=False) == [0, 0.2, 0.4, 0.6000000000000001, 0.8]
    assert _ticks(0, 1, fixed=True) == [0, 0.25, 0.5, 0.75, 1]


def test_every_text_is_escaped_and_cut_to_its_column() -> None:
    name = "<b>" + "x" * 300 + "</b> & more"
    svg = bar_chart([Bar(name, (Segment(name, 0.5),), note=name, group=name)],
                    x_label=name, y_label=name, x_max=1.0, reference=(0.5, name))
    assert "<b>" not in svg and "&lt;b&gt;" in svg
    shown = [html.unescape(a or b) for a, b in
             re.findall(r">([^<>]*)</text>|>([^<>]*)<title>", svg)]
    assert max(map(len, shown)) <= 900 / 7  # none wider than the chart
    assert f"<title>{html.escape(name)}</title>" in svg  # the whole name in the tooltip


def test_fit_text_keeps_short_text_and_cuts_long_text() -> None:
    assert fit_text("a  b\nc", 70) == "a b c"
    assert fit_text("x" * 20, 70) == "x" * 9 + "…"


def test_line_styles_steps_and_markers_only() -> None:
    pts = [SeriesPoint(0, 0.1), SeriesPoint(1, 0.3), SeriesPoint(2, 0.2)]
    svg = line_chart({"held": pts, "dots": pts}, x_label="runs", y_label="f1",
                     styles={"held": SeriesStyle(line="steps"),
                             "dots": SeriesStyle(line="none", dot="hollow")})
    (line,) = re.findall(r'<polyline points="([^"]+)"', svg)  # markers-only: no line
    assert len(line.split()) == 1 + 2 * 2
    assert svg.count('fill="white" stroke=') == 3 + 1  # hollow dots and their legend key


def test_default_line_chart_is_unchanged_for_existing_callers() -> None:
    pts = [SeriesPoint(1, 0.5, 0.4, 0.6), SeriesPoint(2, 0.6, 0.5, 0.7)]
    svg = line_chart({"method": pts, "ceiling": pts}, x_label="budget", y_label="test f1",
                     dashed=["ceiling"])
    assert svg.count("<polygon") == 1 and svg.count('stroke-dasharray="6 4"') == 2
    assert "<title>method: 0.5000 at 1 [0.4000, 0.6000]</title>" in svg
