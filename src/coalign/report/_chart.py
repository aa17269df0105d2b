"""The report's line charts as inline SVG (``_lines.line_chart``; no scripts, no fonts): the
anytime curve of a run, and quality against cost of the configs it validated.

Anytime: the current system's validation score against the cost spent so far, drawn as steps
(it changes only when a step is accepted), with its test metric where the run store holds it; a
large dot marks an accepted step, a hollow one the score of a rejected proposal. Every dot has a
``<title>`` tooltip, which browsers show on hover without any JavaScript.
"""

from __future__ import annotations

from collections.abc import Sequence

from coalign.report._data import CurvePoint
from coalign.report._front import FrontPoint, cost_recorded
from coalign.report._lines import SeriesPoint, SeriesStyle, line_chart

RUNS_LABEL = "cost so far (equivalent full-system runs)"
STEPS_LABEL = "step (the cost of each step was not recorded)"


def _where(p: CurvePoint) -> str:
    spent = f", {p.runs:.1f} runs spent" if p.runs is not None else ""
    return ("start" if p.step < 0 else f"step {p.step}") + spent


def render_chart(points: Sequence[CurvePoint], metric: str = "score") -> str:
    """SVG markup of ``points``; an empty string when there is nothing to plot. The x axis is
    the equivalent runs spent when every point has them, else the step index."""
    if not points:
        return ""
    by_cost = all(p.runs is not None for p in points)

    def at(p: CurvePoint, y: float, what: str) -> SeriesPoint:
        x = p.runs if by_cost and p.runs is not None else float(p.step)
        return SeriesPoint(x, y, tip=f"{_where(p)}: {what} {y:.4f}")

    val = f"validation {metric}"
    series = {val: [at(p, p.score, f"validation {metric}") for p in points]}
    styles = {val: SeriesStyle(color="#1a73e8", line="steps")}
    accepted = [at(p, p.score, f"accepted, validation {metric}") for p in points if p.accepted]
    if accepted:
        series["accepted step"] = accepted
        styles["accepted step"] = SeriesStyle(color="#137333", line="none", dot="large")
    rejected = [at(p, p.candidate, f"rejected, validation {metric}") for p in points
                if p.candidate is not None and not p.accepted]
    if rejected:
        name = "rejected proposal (validation)"
        series[name] = rejected
        styles[name] = SeriesStyle(color="#888888", line="none", dot="hollow")
    tested = [p for p in points if p.test is not None]
    if tested:
        whole = len(tested) == len(points)  # else only where the test score changes is known
        name = f"test {metric}"
        series[name] = [at(p, p.test, f"test {metric}") for p in tested
                        if whole or p.step < 0 or p.accepted]
        styles[name] = SeriesStyle(color="#d62728", line="steps" if whole else "none",
                                   dot="filled")
    return line_chart(series, x_label=RUNS_LABEL if by_cost else STEPS_LABEL,
                      y_label=f"{metric} (mean over the split)", styles=styles)


def front_chart(points: Sequence[FrontPoint], metric: str = "score") -> str:
    """Quality against cost per query of the validated configs: every config a dot, the
    non-dominated ones joined by a line (cheapest first), the start and the final config
    marked. Empty when there is nothing to plot or no config recorded a cost."""
    if not cost_recorded(points):
        return ""

    def at(p: FrontPoint) -> SeriesPoint:
        return SeriesPoint(p.cost, p.quality_score, tip=f"{p.label}: validation {metric} "
                           f"{p.quality_score:.4f}, {p.cost:.3f} model s per query "
                           f"({p.inputs} inputs)")

    front = sorted((p for p in points if p.on_front), key=lambda p: (p.cost, -p.quality_score))
    series = {"non-dominated front": [at(p) for p in front],
              "validated config": [at(p) for p in points]}
    styles = {"non-dominated front": SeriesStyle(color="#1a73e8", dot="filled"),
              "validated config": SeriesStyle(color="#888888", line="none", dot="hollow")}
    for name, color, pick in (("start (unoptimized)", "#ff7f0e", lambda p: p.start),
                              ("final config", "#137333", lambda p: p.final)):
        series[name] = [at(p) for p in points if pick(p)]
        styles[name] = SeriesStyle(color=color, line="none", dot="large")
    return line_chart(series, x_label="mean model seconds per validation query (cost)",
                      y_label=f"validation {metric} (mean)", styles=styles)
