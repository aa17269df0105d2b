"""Render ``ReportData`` as one self-contained HTML page: inline CSS and SVG, no scripts.

Every string that came from the store (prompts, demos, answers, names, reasons) goes through
``_e`` before it reaches the page, and a Content-Security-Policy forbids scripts and network
loads as a second line of defence.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from coalign.report._chart import front_chart, render_chart
from coalign.report._data import AlignmentRow, ReportData
from coalign.report._escape import escape
from coalign.report._figures import alignment_chart, cost_chart, routing_chart, step_test_chart
from coalign.report._format import interval_text
from coalign.report._intervals import Interval

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:3px 6px;
vertical-align:top;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.accepted td.state{color:#137333;font-weight:600}tr.rejected td.state{color:#888}
tr.skipped td.state{color:#aaa;font-style:italic}.few{color:#b06000}
tr.total td{font-weight:600}pre{white-space:pre-wrap;background:#f6f6f6;padding:.6em;margin:.3em 0}
.missing{background:#fff4e5;border:1px solid #f0c36d;padding:.5em 1em}
figure.chart{margin:.6em 0 1em}figure.chart svg{display:block;max-width:100%;height:auto}
figure.chart figcaption{color:#555;font-size:13px;margin-top:.3em}
.wide{overflow-x:auto;max-width:100%}td,li,code{overflow-wrap:break-word}td.text{overflow-wrap:anywhere;min-width:8em}
.muted{color:#777}
"""
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _e(value: object) -> str:
    return escape(value)


def _num(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _interval(i: Interval | None) -> str:
    return "—" if i is None else interval_text(*i)


def _delta(i: Interval | None) -> str:
    """A step's paired validation change under its val after (none: nothing to show)."""
    return "" if i is None else f'<div class="interval muted">Δ {interval_text(*i)}</div>'


def _table(head: Sequence[str], rows: Iterable[str], cls: str = "") -> str:
    ths = "".join(f"<th>{_e(h)}</th>" for h in head)
    attr = f' class="{cls}"' if cls else ""
    return (f'<div class="wide"><table{attr}><thead><tr>{ths}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _summary(d: ReportData) -> str:
    items = [f"<li>run directory: <code>{_e(d.run_dir)}</code></li>",
             f"<li>system: {_e(d.system) if d.system else '<i>unknown</i>'}</li>",
             f"<li>steps: {len(d.steps)} ({d.accepted} accepted, {d.rejected} rejected by "
             f"the gate, {d.skipped} skipped: nothing validated)</li>"]
    if d.result is not None:
        metric = _e(d.result.get("metric", "metric"))
        before, after = d.result.get("before"), d.result.get("after")
        fmt = (lambda v: _num(v) if isinstance(v, int | float) else _e(v))  # noqa: E731
        delta = ("; Δ (mean paired difference, 95% paired bootstrap interval): "
                 f"{_interval(d.test_interval)}" if d.test_interval is not None
                 else "; no paired interval: the test traces of both systems are not stored")
        items.append(f"<li>test {metric}: {fmt(before)} → {fmt(after)} on "
                     f"{_e(d.result.get('test_size', '?'))} examples{delta}</li>")
    return f"<ul>{''.join(items)}</ul>"


def _missing(d: ReportData) -> str:
    if not d.missing:
        return ""
    items = "".join(f"<li>{_e(m)}</li>" for m in d.missing)
    return f'<div class="missing"><b>Missing from this run store:</b><ul>{items}</ul></div>'


def _figure(name: str, svg: str, caption: str, absent: str) -> str:
    """A chart with its caption, or the one-line note saying why it is not drawn."""
    if not svg:
        return f'<p class="muted absent" id="no-chart-{name}">Not drawn: {_e(absent)}</p>'
    return (f'<figure class="chart" id="chart-{name}">{svg}<figcaption>{_e(caption)}'
            "</figcaption></figure>")


def _anytime(d: ReportData) -> str:
    return _figure(
        "anytime", render_chart(d.curve, d.metric),
        f"Blue steps: validation {d.metric} of the current system (it changes only when a step "
        "is accepted); large green dots: accepted steps; hollow grey dots: validation score of "
        "a rejected proposal (a skipped step validated nothing and has no dot); red: test "
        f"{d.metric} of the current system, where stored. The "
        "curve starts where stage 1 (collecting pairs, training the local rewards) ended.",
        "no step recorded a validation score.")


def _step_tests(d: ReportData) -> str:
    absent = ("no step was accepted." if not d.accepted else
              "no accepted step has its test score stored (Job.steps_on_test() stores them; "
              "coalign optimize stores only the unoptimized and the final system's).")
    return _figure("step-tests", step_test_chart(d.step_tests, d.metric),
                   f"Test {d.metric} before and after each accepted step: does its validation "
                   "gain hold on test? Before a step is after the previous accepted one.",
                   absent)


def _routing(d: ReportData) -> str:
    return _figure(
        "routing", routing_chart(d.routing, d.metric, d.final),
        f"Per option: its share of the inputs, their mean {d.metric}, and per input the "
        "component's LLM tokens (fresh calls; a cache hit costs none) and seconds; from "
        f"{d.routing_source}.",
        "the final system's stored traces record no per-instance choice (no per-instance "
        "param, or no traces of the final system).")


def _steps(d: ReportData) -> str:
    if not d.steps:
        return '<p class="muted">No optimizer steps recorded.</p>'
    rows = []
    for s in d.steps:
        state = s.decision
        rows.append(
            f'<tr class="{state}" id="step-{s.step}"><td class="num">{s.step}</td>'
            f'<td class="state">{state}</td><td>{_e(s.component)}</td><td>{_e(s.param)}</td>'
            f'<td class="text">{_e(s.value)}{_candidates(s.candidates)}</td>'
            f"<td class=\"num\">{_num(s.val_before)}</td>"
            f'<td class="num">{_num(s.val_after)}{_delta(s.interval)}</td>'
            f"<td>{_e(s.reason)}</td>"
            f'<td class="num">{_num(s.seconds, 1)}</td></tr>')
    note = ('<p class="muted">Decision: accepted (validated, taken), rejected (validated, '
            "refused by the gate or stopped early as clearly worse) or skipped (nothing was "
            "validated; the reason says why). Δ under an accepted step's val after: the mean "
            "paired difference after minus before over the validation inputs, with its 95% "
            "paired bootstrap interval (the gate's figures); a refused candidate's validation "
            "traces are not stored, so it has none.</p>")
    return note + _table(["step", "decision", "component", "param", "proposed value",
                          "val before", "val after", "reason", "seconds"], rows, "steps")


def _candidates(cands: tuple[tuple[str, float], ...]) -> str:
    if not cands:
        return ""
    items = "".join(f"<li>{_e(v)} <span class=\"muted\">({score:.3f})</span></li>"
                    for v, score in cands)
    return (f'<details class="candidates"><summary>{len(cands)} candidates by local reward'
            f"</summary><ol>{items}</ol></details>")


def _costs(d: ReportData) -> str:
    if not d.costs:
        return '<p class="muted">No cost ledger recorded.</p>'
    def hits(n: int | None) -> str:
        return "—" if n is None else str(n)

    rows = [f'<tr class="phase"><td>{_e(c.phase)}</td><td class="num">{c.runs:.2f}</td>'
            f'<td class="num">{c.llm_calls}</td><td class="num">{hits(c.cache_hits)}</td></tr>'
            for c in d.costs]
    rows.append(f'<tr class="total"><td>total</td><td class="num">{d.total_runs:.2f}</td>'
                f'<td class="num">{d.total_calls}</td>'
                f'<td class="num">{hits(d.total_cache_hits)}</td></tr>')
    chart = _figure("costs", cost_chart(d.costs),
                    "Segments: the components that ran in each phase, in equal shares of a "
                    "full run as the ledger counts them (where the run store kept the cost "
                    "account).", "no cost ledger recorded.")
    return (chart + f'<p class="muted">Equivalent full-system runs per phase; LLM calls the '
            f"model answered and requests the response cache answered; source: "
            f"{_e(d.cost_source)}.</p>"
            + _table(["phase", "equivalent runs", "LLM calls", "cache hits"], rows, "costs"))


def _alignment(d: ReportData) -> str:
    if not d.alignment:
        return '<p class="muted">No alignment figures recorded.</p>'
    def wilson(a: AlignmentRow) -> str:
        shown = "—" if a.interval is None else f"[{a.interval[0]:.3f}, {a.interval[1]:.3f}]"
        return shown + (' <span class="few">too few pairs: not meaningful</span>'
                        if a.too_few else "")

    rows = [f"<tr><td>{_e(a.component)}</td><td class=\"num\">"
            f"{'—' if a.pairs is None else a.pairs}</td>"
            f'<td class="num">{_num(a.accuracy, 3)}</td><td class="interval">{wilson(a)}</td>'
            f'<td class="num">{"—" if a.inputs is None else a.inputs}</td>'
            f'<td class="num">{_num(a.input_accuracy, 3)}</td></tr>' for a in d.alignment]
    chart = _figure("alignment", alignment_chart(d.alignment),
                    "How often each component's local reward ranks a held-out pair as the "
                    "downstream reward does, with the number of pairs and a 95% Wilson "
                    f"interval; the dashed line is chance. Under {d.min_pairs} pairs (the "
                    "loop's min_alignment_pairs) a figure is marked too few to mean anything.",
                    "no component has an accuracy recorded.")
    return (
        chart + '<p class="muted">Pairwise accuracy of each local reward on held-out stage-1 '
        "pairs, pooled (with its 95% Wilson interval) and averaged per input (an input with "
        f"many pairs counts once). Figures on fewer than {d.min_pairs} pairs are not "
        "meaningful: the loop does not act on them either.</p>"
        + _table(["component", "held-out pairs", "pairwise accuracy", "95% interval", "inputs",
                  "per-input accuracy"], rows, "alignment"))


def _front(d: ReportData) -> str:
    absent = ("no validation traces recorded." if not d.front else "this run records no cost "
              "per query (its validation traces carry no model seconds).")
    return _figure(
        "front", front_chart(d.front, d.metric),
        f"Each validated config's mean validation {d.metric} against its mean model seconds "
        "per query (the model chosen is in it); the blue line joins the non-dominated ones "
        "(no other config is both better and cheaper); orange: the start, green: the final "
        f"config. From the stored validation traces: the {d.rejected} candidate(s) the gate "
        "refused are not stored, so not drawn.", absent)


def _final(d: ReportData) -> str:
    if not d.final:
        return '<p class="muted">No final configuration recorded.</p>'
    out = []
    for p in d.final:
        changed = (f"set by accepted step(s) {', '.join(map(str, p.changed_at))}"
                   if p.changed_at else "unchanged by the optimizer")
        out.append(f'<div class="param"><h3>{_e(p.component)}.{_e(p.param)} '
                   f'<span class="muted">({_e(p.kind)}; {changed})</span></h3>')
        if p.kind == "text":
            out.append(f'<pre class="instruction">{_e(p.text)}</pre>')
            if p.demos:
                demos = "".join(f"<pre>{_e(x)}</pre>" for x in p.demos)
                out.append(f"<details><summary>{len(p.demos)} demonstration(s)</summary>"
                           f"{demos}</details>")
        else:
            out.append(f'<pre class="value">{_e(p.text)}</pre>')
        out.append("</div>")
    return "".join(out)


def _examples(d: ReportData) -> str:
    if not d.examples:
        return '<p class="muted">No validation traces recorded.</p>'
    out = []
    for i, group in enumerate(d.examples):
        is_open = " open" if i == len(d.examples) - 1 else ""  # the last validated: the final one
        rows = [f'<tr><td>{_e(x.example_id)}</td><td class="text">{_e(x.inputs)}</td>'
                f'<td class="text">{_e(x.answer)}</td>'
                f'<td class="num">{_num(x.reward, 3)}</td></tr>' for x in group.examples]
        out.append(f"<details{is_open}><summary>{_e(group.label)}</summary>"
                   + _table(["example", "inputs", "final answer", "reward"], rows, "examples")
                   + "</details>")
    return "".join(out)


def render_html(d: ReportData) -> str:
    """The whole page as a string."""
    config = (f"<details><summary>run configuration</summary><pre>{_e(d.run_config)}</pre>"
              "</details>" if d.run_config else "")
    title = f"coalign report: {d.system or 'unknown system'}"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1>{_summary(d)}{_missing(d)}{config}"
        f"<h2>Anytime curve: {_e(d.metric)} against cost</h2>{_anytime(d)}"
        f"<h2>Test {_e(d.metric)} before and after each accepted step</h2>{_step_tests(d)}"
        f"<h2>Step ledger</h2>{_steps(d)}"
        f"<h2>Cost ledger</h2>{_costs(d)}"
        f"<h2>Local reward alignment</h2>{_alignment(d)}"
        f"<h2>Quality against cost of the validated configs</h2>{_front(d)}"
        f"<h2>Per-instance choices: where the inputs went</h2>{_routing(d)}"
        f"<h2>Final configuration</h2>{_final(d)}"
        f"<h2>Example answers on validation</h2>{_examples(d)}"
        "</body></html>\n")
