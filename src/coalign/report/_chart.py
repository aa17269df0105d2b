"""The validation score over iterations as an inline SVG line chart (no scripts, no fonts to load).

The line is the current system's score (a step function); a filled dot marks an accepted step, a
hollow one the score of a rejected proposal. Every dot has a ``<title>`` tooltip, which browsers
show on hover without any JavaScript.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from coalign.report._data import CurvePoint

WIDTH, HEIGHT = 720, 280
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 40


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def _bounds(points: Sequence[CurvePoint]) -> tuple[float, float]:
    values = [p.score for p in points] + [p.candidate for p in points if p.candidate is not None]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.1 or max(abs(hi) * 0.1, 0.05)  # a flat curve still gets a visible band
    return lo - pad, hi + pad


def render_chart(points: Sequence[CurvePoint], metric: str = "validation score") -> str:
    """SVG markup of ``points``; an empty string when there is nothing to plot."""
    if not points:
        return ""
    lo, hi = _bounds(points)
    x0, x1 = points[0].step, max(points[-1].step, points[0].step + 1)

    def x(step: int) -> float:
        return LEFT + (step - x0) / (x1 - x0) * (WIDTH - LEFT - RIGHT)

    def y(value: float) -> float:
        return TOP + (hi - value) / (hi - lo) * (HEIGHT - TOP - BOTTOM)

    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
             f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
             f'aria-label="{escape(metric)} over iterations">']
    for v in _ticks(lo, hi):
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" '
                     f'y2="{y(v):.1f}"/><text class="tick" x="{LEFT - 6}" y="{y(v) + 4:.1f}" '
                     f'text-anchor="end">{v:.3f}</text>')
    step_every = max(1, (x1 - x0) // 10)
    for s in range(x0, x1 + 1, step_every):
        label = "start" if s < 0 else str(s)
        parts.append(f'<text class="tick" x="{x(s):.1f}" y="{HEIGHT - BOTTOM + 16}" '
                     f'text-anchor="middle">{label}</text>')
    parts.append(f'<text class="axis" x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{HEIGHT - 6}" '
                 f'text-anchor="middle">step</text>')
    # Drawn as steps: the current system keeps its score until a step is accepted.
    corners = [(points[0].step, points[0].score)]
    for prev, p in zip(points, points[1:], strict=False):
        corners += [(p.step, prev.score), (p.step, p.score)]
    line = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in corners)
    parts.append(f'<polyline class="current" points="{line}"/>')
    for p in points:
        if p.candidate is not None and not p.accepted:
            parts.append(f'<circle class="rejected" cx="{x(p.step):.1f}" '
                         f'cy="{y(p.candidate):.1f}" r="4"><title>step {p.step}: rejected, '
                         f'{p.candidate:.4f}</title></circle>')
        if p.accepted:
            parts.append(f'<circle class="accepted" cx="{x(p.step):.1f}" cy="{y(p.score):.1f}" '
                         f'r="5"><title>step {p.step}: accepted, {p.score:.4f}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)
