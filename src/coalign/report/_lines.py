"""Several named series against a shared x axis, each with an optional interval band, as one
standalone SVG (anytime curves: a metric against equivalent runs, one line per series).

Self-contained: inline styles, no scripts, no fonts to load; each point has a ``<title>``
tooltip. ``log_x`` spaces the x axis logarithmically (budgets that double). A series' look is
its ``SeriesStyle``: a line (solid, dashed, or drawn as steps that hold a value until the next
point) or none, and filled, hollow or large dots.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coalign.report._escape import escape

__all__ = ["COLORS", "SeriesPoint", "SeriesStyle", "fit_text", "line_chart"]

WIDTH, HEIGHT = 900, 380
LEFT, RIGHT, TOP, BOTTOM = 64, 270, 24, 52
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#17becf", "#bcbd22")
CHAR_W = 7.0  # a generous mean glyph width of 12px sans-serif: text is cut to fit by it
MIN_TICK_GAP = 40  # px between x tick labels; closer ones are left out


@dataclass(frozen=True)
class SeriesPoint:
    x: float
    y: float
    lo: float | None = None
    hi: float | None = None
    tip: str = ""  # tooltip; default "<series>: <y> at <x>"


@dataclass(frozen=True)
class SeriesStyle:
    color: str | None = None  # default: the palette, by the series' position
    line: str = "solid"  # "solid" | "dashed" | "steps" (hold y until the next x) | "none"
    dot: str = "filled"  # "filled" (r 3) | "large" (r 5, dark ring) | "hollow" (r 4)
    band: bool = True  # draw lo..hi as a shaded band


_DASHED = SeriesStyle(line="dashed", band=False)


def fit_text(text: str, width: float) -> str:
    """``text`` on one line, cut with an ellipsis to fit ``width`` px at 12px sans-serif."""
    flat = " ".join(text.split())
    most = max(1, int(width // CHAR_W))
    return flat if len(flat) <= most else flat[: most - 1] + "…"


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def _dot(cx: float, cy: float, color: str, kind: str, tip: str) -> str:
    shape = {"large": f'r="5" fill="{color}" stroke="#222" stroke-width="1"',
             "hollow": f'r="4" fill="white" stroke="{color}" stroke-width="1.5"'}.get(
                 kind, f'r="3" fill="{color}"')
    return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" {shape}><title>{escape(tip)}</title></circle>'


def line_chart(series: Mapping[str, Sequence[SeriesPoint]], *, x_label: str, y_label: str,
               title: str = "", log_x: bool = False, dashed: Sequence[str] = (),
               styles: Mapping[str, SeriesStyle] | None = None) -> str:
    """SVG markup; ``dashed`` names series drawn dashed and without a band (references such
    as ceilings, not competitors); ``styles`` sets any series' look."""
    pts = [p for s in series.values() for p in s]
    if not pts:
        raise ValueError("line_chart needs at least one point")
    if log_x and min(p.x for p in pts) <= 0:
        raise ValueError("line_chart: log_x needs positive x values")
    look = {name: (styles or {}).get(name) or (_DASHED if name in dashed else SeriesStyle())
            for name in series}
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
        out.append(f'<text x="{LEFT}" y="14" font-weight="bold">'
                   f'{escape(fit_text(title, WIDTH - LEFT))}</text>')
    for v in _nice_ticks(y0, y1):
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py(v):.1f}" y2="{py(v):.1f}" '
                   f'stroke="#ddd"/><text x="{LEFT - 6}" y="{py(v) + 4:.1f}" '
                   f'text-anchor="end">{v:.3f}</text>')
    last = -math.inf
    for v in sorted({p.x for p in pts}):
        if px(v) - last >= MIN_TICK_GAP:  # crowded labels would overlap: keep every few
            last = px(v)
            out.append(f'<text x="{px(v):.1f}" y="{HEIGHT - BOTTOM + 16}" '
                       f'text-anchor="middle">{v:g}</text>')
    out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{HEIGHT - 14}" '
               f'text-anchor="middle">{escape(fit_text(x_label, WIDTH - RIGHT - LEFT))}</text>')
    mid = (TOP + HEIGHT - BOTTOM) / 2
    out.append(f'<text x="16" y="{mid:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {mid:.1f})">'
               f'{escape(fit_text(y_label, HEIGHT - TOP - BOTTOM))}</text>')
    for k, (name, points) in enumerate(series.items()):
        style = look[name]
        color = style.color or COLORS[k % len(COLORS)]
        points = sorted(points, key=lambda p: p.x)
        band = [p for p in points if p.lo is not None and p.hi is not None]
        if len(band) > 1 and style.band:
            ring = ([f"{px(p.x):.1f},{py(p.hi):.1f}" for p in band]
                    + [f"{px(p.x):.1f},{py(p.lo):.1f}" for p in reversed(band)])
            out.append(f'<polygon points="{" ".join(ring)}" fill="{color}" '
                       'fill-opacity="0.15" stroke="none"/>')
        dash = ' stroke-dasharray="6 4"' if style.line == "dashed" else ""
        corners = [(p.x, p.y) for p in points]
        if style.line == "steps":
            corners = corners[:1] + [c for a, b in zip(points, points[1:], strict=False)
                                     for c in ((b.x, a.y), (b.x, b.y))]
        if style.line != "none":
            line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in corners)
            out.append(f'<polyline points="{line}" fill="none" stroke="{color}" '
                       f'stroke-width="2"{dash}/>')
        for p in points:
            tip = p.tip or f"{name}: {p.y:.4f} at {p.x:g}"
            if p.lo is not None and p.hi is not None:
                tip += f" [{p.lo:.4f}, {p.hi:.4f}]"
            out.append(_dot(px(p.x), py(p.y), color, style.dot, tip))
        ly = TOP + 8 + 18 * k
        key = (_dot(WIDTH - RIGHT + 24, ly, color, style.dot, name) if style.line == "none"
               else f'<line x1="{WIDTH - RIGHT + 12}" x2="{WIDTH - RIGHT + 36}" y1="{ly}" '
                    f'y2="{ly}" stroke="{color}" stroke-width="2"{dash}/>')
        out.append(f'{key}<text x="{WIDTH - RIGHT + 42}" y="{ly + 4}">'
                   f'{escape(fit_text(name, RIGHT - 48))}</text>')
    out.append("</svg>")
    return "\n".join(out)
