"""Horizontal bar charts as one standalone SVG: each bar a stack of segments, bars grouped
under a heading, a note after each bar, an optional reference line (such as chance).

Self-contained like ``_lines``: inline styles, no scripts; every segment has a ``<title>``
tooltip, every text is escaped and cut to fit its column, so nothing spills out of the chart.
A segment's colour follows its key, and keys are listed in a legend when there are several.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from coalign.report._escape import escape
from coalign.report._lines import CHAR_W, COLORS, fit_text

__all__ = ["Bar", "Segment", "bar_chart"]

WIDTH = 900
LABEL_W, NOTE_W = 210, 250  # the label column left of the bars, the note column right of them
TOP, BOTTOM, BAR_H, GAP, HEAD_H = 12, 48, 18, 6, 22


@dataclass(frozen=True)
class Segment:
    key: str  # legend entry; one key, one colour
    value: float
    tip: str = ""  # tooltip; default "<key>: <value>"


@dataclass(frozen=True)
class Bar:
    label: str
    segments: tuple[Segment, ...]
    note: str = ""  # written after the bar's end
    group: str = ""  # a heading over consecutive bars of one group


def _ticks(lo: float, hi: float, fixed: bool) -> list[float]:
    """Five even ticks over a fixed range, else round steps (1, 2, 2.5 or 5 x 10^k) from ``lo``
    up to the first at or past ``hi``."""
    if fixed:
        return [lo + (hi - lo) * i / 4 for i in range(5)]
    raw = (hi - lo) / 4
    unit = 10 ** math.floor(math.log10(raw))
    step = next(m * unit for m in (1, 2, 2.5, 5, 10) if m * unit >= raw)
    first = math.floor(lo / step)
    return [(first + i) * step for i in range(math.ceil(hi / step) - first + 1)]


def _legend(keys: Sequence[str], colors: dict[str, str], y: float) -> tuple[list[str], float]:
    """Swatches and names, wrapped onto as many rows as they need; returns the rows' markup
    and the y below them."""
    out, x = [], float(LABEL_W)
    for key in keys:
        name = fit_text(key, WIDTH - LABEL_W - 24)
        w = 18 + len(name) * CHAR_W + 16
        if x + w > WIDTH and x > LABEL_W:
            x, y = float(LABEL_W), y + 18
        out.append(f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="12" height="12" '
                   f'fill="{colors[key]}"/><text x="{x + 18:.1f}" y="{y:.1f}">'
                   f"{escape(name)}</text>")
        x += w
    return out, y + 16


def bar_chart(bars: Sequence[Bar], *, x_label: str, y_label: str = "", title: str = "",
              x_max: float | None = None, reference: tuple[float, str] | None = None,
              fmt: str = "{:.2f}", note_width: int = NOTE_W) -> str:
    """SVG markup of ``bars`` (top to bottom), the x axis from min(0, values) to ``x_max`` (or
    the largest bar); ``reference`` is a dashed vertical line at a value, with its name;
    ``note_width`` px are kept right of the bars for their notes."""
    if not bars:
        raise ValueError("bar_chart needs at least one bar")
    keys = list(dict.fromkeys(s.key for b in bars for s in b.segments))
    colors = {k: COLORS[i % len(COLORS)] for i, k in enumerate(keys)}
    ends = [sum(s.value for s in b.segments) for b in bars]
    lo = min([0.0, *ends])
    hi = max([x_max or 0.0, *ends, reference[0] if reference else 0.0])
    hi = hi if hi > lo else lo + 1
    ticks = _ticks(lo, hi, fixed=x_max is not None and x_max >= max(ends))
    lo, hi = ticks[0], ticks[-1]
    plot_l, plot_r = LABEL_W, WIDTH - note_width

    def px(v: float) -> float:
        return plot_l + (v - lo) / (hi - lo) * (plot_r - plot_l)

    out: list[str] = []
    y = float(TOP)
    if title:
        out.append(f'<text x="8" y="{y + 12:.1f}" font-weight="bold">'
                   f"{escape(fit_text(title, WIDTH - 16))}</text>")
        y += 22
    if len(keys) > 1:
        legend, y = _legend(keys, colors, y + 12)
        out += legend
    if y_label or reference:  # a row for the category axis' name and the reference's
        if y_label:
            out.append(f'<text x="8" y="{y + 12:.1f}" fill="#555">'
                       f"{escape(fit_text(y_label, LABEL_W - 16))}</text>")
        y += 18
    plot_top, rows, group = y, [], None
    for bar, end in zip(bars, ends, strict=True):
        if bar.group and bar.group != group:
            y += 4 if group is not None else 0
            rows.append(f'<text x="8" y="{y + 14:.1f}" font-weight="bold">'
                        f"{escape(fit_text(bar.group, WIDTH - 16))}</text>")
            y += HEAD_H
        group = bar.group
        label = fit_text(bar.label, LABEL_W - 16 - (12 if bar.group else 0))
        rows.append(f'<text x="{LABEL_W - 8}" y="{y + BAR_H - 5:.1f}" text-anchor="end">'
                    f"{escape(label)}<title>{escape(bar.label)}</title></text>")
        start = 0.0
        for seg in bar.segments:
            a, b = sorted((px(start), px(start + seg.value)))
            tip = seg.tip or f"{seg.key}: {fmt.format(seg.value)}"
            rows.append(f'<rect x="{a:.1f}" y="{y:.1f}" width="{max(b - a, 0.5):.1f}" '
                        f'height="{BAR_H}" fill="{colors[seg.key]}"><title>{escape(tip)}'
                        "</title></rect>")
            start += seg.value
        if bar.note:
            rows.append(f'<text x="{max(px(end), px(0)) + 6:.1f}" y="{y + BAR_H - 5:.1f}">'
                        f"{escape(fit_text(bar.note, WIDTH - 8 - max(px(end), px(0))))}</text>")
        y += BAR_H + GAP
    plot_bottom = y
    grid = []
    for v in ticks:
        grid.append(f'<line x1="{px(v):.1f}" x2="{px(v):.1f}" y1="{plot_top:.1f}" '
                    f'y2="{plot_bottom:.1f}" stroke="#e4e4e4"/><text x="{px(v):.1f}" '
                    f'y="{plot_bottom + 16:.1f}" text-anchor="middle">'
                    f"{escape(fmt.format(v))}</text>")
    if reference is not None:
        rx = px(reference[0])
        grid.append(f'<line x1="{rx:.1f}" x2="{rx:.1f}" y1="{plot_top - 2:.1f}" '
                    f'y2="{plot_bottom:.1f}" stroke="#555" stroke-dasharray="4 3"/>'
                    f'<text x="{rx + 4:.1f}" y="{plot_top - 6:.1f}" fill="#555">'
                    f"{escape(fit_text(reference[1], WIDTH - 8 - rx))}</text>")
    height = plot_bottom + BOTTOM
    mid = (plot_l + plot_r) / 2
    axis = (f'<text x="{mid:.1f}" y="{height - 12:.1f}" text-anchor="middle">'
            f"{escape(fit_text(x_label, 2 * min(mid, WIDTH - mid) - 16))}</text>")
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
            f'viewBox="0 0 {WIDTH} {height:.0f}" role="img" '
            f'aria-label="{escape(title or x_label)}" font-family="sans-serif" font-size="12">'
            f'<rect width="{WIDTH}" height="{height:.0f}" fill="white"/>')
    return "\n".join([head, *out, *grid, *rows, axis, "</svg>"])
