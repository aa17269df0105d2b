"""The report's bar charts, built from ``ReportData`` records with ``_bars.bar_chart``: the cost
ledger per phase, local-reward alignment per component, each accepted step's test metric before
and after it, and where per-instance choices sent the inputs. Each returns an empty string when
the run store holds nothing to draw."""

from __future__ import annotations

from collections.abc import Sequence

from coalign.report._bars import Bar, Segment, bar_chart
from coalign.report._data import AlignmentRow, CostRow, ParamView, RouteRow, StepTest

ALL = "all components"  # the one segment of a phase whose per-component split was not kept


def cost_chart(costs: Sequence[CostRow]) -> str:
    if not costs:
        return ""
    bars = []
    for c in costs:
        parts = c.components or ((ALL, c.runs),)
        hits = "" if c.cache_hits is None else f", {c.cache_hits} cache hits"
        bars.append(Bar(c.phase, tuple(
            Segment(comp, runs, f"{c.phase}, {comp}: {runs:.2f} equivalent runs")
            for comp, runs in parts), f"{c.runs:.1f} runs, {c.llm_calls} LLM calls{hits}"))
    totals: dict[str, float] = {}
    for c in costs:
        for comp, runs in c.components or ((ALL, c.runs),):
            totals[comp] = totals.get(comp, 0.0) + runs
    calls = sum(c.llm_calls for c in costs)
    hits = [c.cache_hits for c in costs]
    cached = "" if None in hits else f", {sum(h or 0 for h in hits)} cache hits"
    bars.append(Bar("all phases", tuple(
        Segment(comp, runs, f"all phases, {comp}: {runs:.2f} equivalent runs")
        for comp, runs in totals.items()),
        f"{sum(totals.values()):.1f} runs, {calls} LLM calls{cached}", group="total"))
    return bar_chart(bars, x_label="equivalent full-system runs (segments: components)",
                     y_label="phase", fmt="{:.1f}")


def alignment_chart(rows: Sequence[AlignmentRow]) -> str:
    bars = []
    for a in rows:
        pairs = "?" if a.pairs is None else str(a.pairs)
        inputs = f" from {a.inputs} inputs" if a.inputs is not None else ""
        group = f"{a.component}: {pairs} held-out pairs{inputs}"
        if a.accuracy is not None:
            # a figure on too few pairs gets its own colour and says so: 1.000 on 3 is noise
            key = "pairwise accuracy" + (" (too few pairs: not meaningful)" if a.too_few
                                         else "")
            ci = "" if a.interval is None else f" [{a.interval[0]:.2f}, {a.interval[1]:.2f}]"
            bars.append(Bar("pooled over pairs", (Segment(key, a.accuracy),),
                            f"{a.accuracy:.3f}{ci} on {pairs} pairs"
                            + (", too few" if a.too_few else ""), group))
        if a.input_accuracy is not None:
            bars.append(Bar("averaged per input",
                            (Segment("per-input accuracy", a.input_accuracy),),
                            f"{a.input_accuracy:.3f} over {a.inputs or '?'} inputs", group))
        if a.accuracy is None and a.input_accuracy is None:
            bars.append(Bar("not measured", (), "too few decisive pairs", group))
    if not bars:
        return ""
    return bar_chart(bars, x_label="pairwise accuracy of the local reward on held-out pairs",
                     y_label="component", x_max=1.0, reference=(0.5, "chance (0.5)"))


def step_test_chart(rows: Sequence[StepTest], metric: str) -> str:
    bars = []
    for s in rows:
        val = ("" if s.val_before is None or s.val_after is None
               else f" (validation {s.val_before:.3f} → {s.val_after:.3f})")
        group = f"step {s.step}: {s.component}.{s.param}{val}"
        delta = s.test_after - s.test_before
        bars += [Bar("test before", (Segment("test before the step", s.test_before),),
                     f"{s.test_before:.3f}", group),
                 Bar("test after", (Segment("test after the step", s.test_after),),
                     f"{s.test_after:.3f} ({delta:+.3f})", group)]
    if not bars:
        return ""
    return bar_chart(bars, x_label=f"test {metric}", y_label="accepted step", fmt="{:.3f}")


def routing_chart(rows: Sequence[RouteRow], metric: str, final: Sequence[ParamView]) -> str:
    chosen = {f"{p.component}.{p.param}" for p in final if p.kind == "policy"}
    bars = []
    for r in rows:
        how = ("chosen per input by the local reward" if r.slot in chosen
               else "the configured option (no selector in place)")
        cost = [f"{r.tokens:.0f} tokens" if r.tokens is not None else "",
                f"{r.seconds:.2f} s" if r.seconds is not None else ""]
        inputs = f"{r.inputs} input" + ("s" if r.inputs != 1 else "")
        note = ", ".join([f"{r.share:.0%} ({inputs})", f"{metric} {r.quality:.3f}",
                          *filter(None, cost)])
        bars.append(Bar(r.option, (Segment("share of inputs", r.share,
                                           f"{r.option}: {r.inputs} inputs, {note}"),),
                        note, f"{r.slot}: {how}"))
    if not bars:
        return ""
    return bar_chart(bars, x_label="share of inputs routed to the option", y_label="option",
                     x_max=1.0, fmt="{:.0%}", note_width=380)
