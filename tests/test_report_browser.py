"""The report's charts in headless Chromium: each chart draws something, nothing overflows the
page or its chart, and names with HTML-special characters are shown as text.

Positions come from a probe copy of the page: the same HTML with its Content-Security-Policy
removed and a script that writes every chart's box (and any text sticking out of it) into an
attribute that ``--dump-dom`` shows. The real page, scripts forbidden, is screenshot at the same
width, and the pixels inside each chart's box are checked for colour (axes, grid and labels are
grey or black; only data marks are coloured).
"""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from coalign.report import write_report
from tests.test_report_cli import CHROMIUM
from tests.test_report_support import (
    METRIC_INJECT,
    NAME_INJECT,
    OPTION_INJECT,
    populate,
    populate_charts,
)

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed "
                                 "(Debian: apt-get install -y chromium)")]

CHARTS = ["anytime", "step-tests", "costs", "alignment", "front", "routing"]
PROBE = """<script>(function () {
  const box = e => { const b = e.getBoundingClientRect();
                     return [b.left + scrollX, b.top + scrollY, b.width, b.height]; };
  const outside = (t, b) => { const r = t.getBoundingClientRect(); return r.width > 0 &&
      (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 ||
       r.bottom > b.bottom + 1); };
  const charts = [...document.querySelectorAll('figure.chart')].map(f => {
    const svg = f.querySelector('svg'), b = svg.getBoundingClientRect();
    return {id: f.id.replace('chart-', ''), box: box(svg),
            overflow: [...svg.querySelectorAll('text')].filter(t => outside(t, b))
                      .map(t => t.textContent)};
  });
  const root = document.documentElement;
  root.setAttribute('data-probe', JSON.stringify({
    charts, absent: [...document.querySelectorAll('.absent')].map(p => p.id),
    scroll_width: root.scrollWidth, client_width: root.clientWidth, height: root.scrollHeight,
    wide: [...document.querySelectorAll('.wide')].filter(w => w.scrollWidth > w.clientWidth)
          .length}));
})();</script>"""


def _chromium(profile: Path, width: int, height: int, *args: str) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--force-device-scale-factor=1", "--disable-background-networking",
           "--disable-component-update", "--no-first-run", "--disable-sync",
           f"--user-data-dir={profile}", f"--window-size={width},{height}", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def probe(page: Path, width: int, tmp: Path) -> dict:
    """Chart boxes and overflow figures of ``page`` laid out ``width`` px wide."""
    html = page.read_text(encoding="utf-8")
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html, count=1)
    copy = tmp / f"probe-{width}.html"
    copy.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = _chromium(tmp / "profile", width, 4000, "--dump-dom", copy.as_uri()).stdout
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, dom[:500]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def screenshot(page: Path, width: int, height: int, tmp: Path):
    from PIL import Image

    shot = tmp / f"shot-{width}.png"
    _chromium(tmp / "profile", width, height, f"--screenshot={shot}", page.as_uri())
    return Image.open(shot).convert("RGB")


def coloured(image, box: list[float]) -> int:
    """Pixels inside ``box`` whose channels differ by more than 60: drawn in a series colour."""
    x, y, w, h = (round(v) for v in box)
    pixels = image.crop((x, y, x + w, y + h)).get_flattened_data()
    return sum(1 for r, g, b in pixels if max(r, g, b) - min(r, g, b) > 60)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("charts") / "run"
    populate_charts(run)
    return write_report(run)


@pytest.mark.parametrize("width", [1280, 800])  # from a laptop half-screen up
def test_every_chart_draws_something_and_nothing_overflows(report, tmp_path, width) -> None:
    pytest.importorskip("PIL")
    found = probe(report, width, tmp_path)
    assert [c["id"] for c in found["charts"]] == CHARTS and found["absent"] == []
    assert found["scroll_width"] <= found["client_width"] == width  # no horizontal scrolling
    assert found["wide"] == 0  # no table scrolls inside its box either
    image = screenshot(report, width, found["height"], tmp_path)
    assert image.size == (width, found["height"])
    for chart in found["charts"]:
        x, y, w, h = chart["box"]
        assert chart["overflow"] == [], chart["id"]  # every label inside its chart
        assert 0 <= x and x + w <= width and w > 300 and h > 100, chart
        assert coloured(image, chart["box"]) > 300, chart["id"]  # data marks were drawn
    # the check can fail: the page's blank margin left of the charts holds no colour
    first = found["charts"][0]["box"]
    assert coloured(image, [0, first[1], max(1, first[0] - 2), first[3]]) == 0


class _SvgText(HTMLParser):
    """Element names of a dumped DOM and the text inside its SVGs."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.svg_text: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)
        self._depth += tag == "svg"

    def handle_endtag(self, tag) -> None:
        self._depth -= tag == "svg"

    def handle_data(self, data) -> None:
        if self._depth:
            self.svg_text.append(data)


def test_names_in_charts_are_text_not_markup(report, tmp_path) -> None:
    dom = _SvgText()
    dom.feed(_chromium(tmp_path / "profile", 1280, 4000, "--dump-dom", report.as_uri()).stdout)
    assert not {"script", "img", "b", "i", "u"} & set(dom.tags)
    assert dom.tags.count("svg") == len(CHARTS)
    drawn = "\n".join(dom.svg_text)
    for raw in (NAME_INJECT, OPTION_INJECT, f"test {METRIC_INJECT}"):
        assert raw in drawn


def test_a_chart_without_data_is_a_note(tmp_path) -> None:
    # no test evaluation of any step, no per-instance choice, no cost per query
    populate(tmp_path / "run")
    found = probe(write_report(tmp_path / "run"), 1280, tmp_path)
    assert found["absent"] == ["no-chart-step-tests", "no-chart-front", "no-chart-routing"]
    assert [c["id"] for c in found["charts"]] == ["anytime", "costs", "alignment"]


def test_the_probe_sees_overflow(tmp_path) -> None:
    # Control: a label running out of its chart and a page wider than the window are caught.
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><figure class="chart" id="chart-x">'
                    '<svg width="100" height="40"><text x="70" y="20">sticking out</text></svg>'
                    '</figure><div style="width:3000px">wide</div></body></html>',
                    encoding="utf-8")
    found = probe(page, 800, tmp_path)
    assert found["charts"][0]["overflow"] == ["sticking out"]
    assert found["scroll_width"] > found["client_width"]
