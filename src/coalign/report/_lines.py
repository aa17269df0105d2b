"""Several named series against a shared x axis, each with an optional interval band, as one
standalone SVG (anytime curves: test metric against equivalent runs, one line per method).

Self-contained: inline styles, no scripts, no fonts to load; each point has a ``<title>``
tooltip. ``log_x`` spaces the x axis logarithmically (budgets that double).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["SeriesPoint", "line_chart"]

WIDTH, HEIGHT = 900, 380
LEFT, RIGHT, TOP, BOTTOM = 64, 270, 24, 52
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#17becf", "#bcbd22")


@dataclass(frozen=True)
class SeriesPoint:
    x: float
    y: float
    lo: float | None = None
    hi: float | None = None


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def line_chart(series: Mapping[str, Sequence[SeriesPoint]], *, x_label: str, y_label: str,
               title: str = "", log_x: bool = False, dashed: Sequence[str] = ()) -> str:
    """SVG markup; ``dashed`` names series drawn dashed and without a band (references such
    as ceilings, not competitors)."""
    pts = [p for s in series.values() for p in s]
    if not pts:
        raise ValueError("line_chart needs at least one point")
    if log_x and min(p.x for p in pts) <= 0:
        raise ValueError("line_chart: log_x needs positive x values")
    fx = (lambda v: math.log10(v)) if log_x else (lambda v: v)  # noqa: E731
    xs = [fx(p.x) for p in pts]
    x0, x1 = min(xs), max(xs)
    x1 = x1 if x1 > x0 else x0 + 1
    ys = [v for p in pts for v in (p.y, p.lo, p.hi) if v is not None]
    y0, y1 = min(ys), max(ys)
    pad = (y1 - y0) * 0.08 or 0.05
    y0, y1 = y0 - pad, y1 + pad

    def px(v: float) -> float:
        return LEFT + (fx(v) - x0) / (x1 - x0) * (WIDTH - LEFT - RIGHT)

    def py(v: float) -> float:
        return TOP + (y1 - v) / (y1 - y0) * (HEIGHT - TOP - BOTTOM)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title or y_label)}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    if title:
        out.append(f'<text x="{LEFT}" y="14" font-weight="bold">{escape(title)}</text>')
    for v in _nice_ticks(y0, y1):
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py(v):.1f}" y2="{py(v):.1f}" '
                   f'stroke="#ddd"/><text x="{LEFT - 6}" y="{py(v) + 4:.1f}" '
                   f'text-anchor="end">{v:.3f}</text>')
    for v in sorted({p.x for p in pts}):
        out.append(f'<text x="{px(v):.1f}" y="{HEIGHT - BOTTOM + 16}" '
                   f'text-anchor="middle">{v:g}</text>')
    out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{HEIGHT - 14}" '
               f'text-anchor="middle">{escape(x_label)}</text>')
    mid = (TOP + HEIGHT - BOTTOM) / 2
    out.append(f'<text x="16" y="{mid:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {mid:.1f})">{escape(y_label)}</text>')
    for k, (name, points) in enumerate(series.items()):
        color = COLORS[k % len(COLORS)]
        points = sorted(points, key=lambda p: p.x)
        band = [p for p in points if p.lo is not None and p.hi is not None]
        if len(band) > 1 and name not in dashed:
            ring = ([f"{px(p.x):.1f},{py(p.hi):.1f}" for p in band]
                    + [f"{px(p.x):.1f},{py(p.lo):.1f}" for p in reversed(band)])
            out.append(f'<polygon points="{" ".join(ring)}" fill="{color}" '
                       'fill-opacity="0.15" stroke="none"/>')
        dash = ' stroke-dasharray="6 4"' if name in dashed else ""
        line = " ".join(f"{px(p.x):.1f},{py(p.y):.1f}" for p in points)
        out.append(f'<polyline points="{line}" fill="none" stroke="{color}" '
                   f'stroke-width="2"{dash}/>')
        for p in points:
            tip = f"{name}: {p.y:.4f} at {p.x:g}"
            if p.lo is not None and p.hi is not None:
                tip += f" [{p.lo:.4f}, {p.hi:.4f}]"
            out.append(f'<circle cx="{px(p.x):.1f}" cy="{py(p.y):.1f}" r="3" fill="{color}">'
                       f'<title>{escape(tip)}</title></circle>')
        ly = TOP + 8 + 18 * k
        out.append(f'<line x1="{WIDTH - RIGHT + 12}" x2="{WIDTH - RIGHT + 36}" y1="{ly}" '
                   f'y2="{ly}" stroke="{color}" stroke-width="2"{dash}/>'
                   f'<text x="{WIDTH - RIGHT + 42}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)
