"""A self-contained ``viz.html`` of a search: the candidate DAG, the (cost, quality) plane with the
front, per-round progress and every prompt. No scripts, no network: inline SVG and CSS only.
Every piece of text that comes from candidates or the task is HTML-escaped.

The layout is computed first (:func:`viz_data`), then rendered, so tests can check the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from coalign.search._selection import compute_pareto_front
from coalign.search._state import ROOT_VERSION, Candidate, SearchState

_COL, _ROW, _PAD = 150, 56, 40
_PLOT_W, _PLOT_H = 520, 360


@dataclass(frozen=True)
class Node:
    version: str
    x: float
    y: float
    status: str  # "base" | "elite" | "complete" | "failed" | "pending" | "running"
    tooltip: str


@dataclass(frozen=True)
class VizData:
    nodes: list[Node]
    edges: list[tuple[str, str, bool]]  # (parent, child, is_secondary)
    width: int
    height: int


def _status(c: Candidate, elite: set[str]) -> str:
    if c.prompt_version in elite:
        return "elite"
    return c.eval_status or "pending"


def _tooltip(c: Candidate) -> str:
    acc = c.metrics.get("accuracy")
    acc_s = f" accuracy={acc:.3f}" if isinstance(acc, int | float) else ""
    return (
        f"{c.prompt_version} (round {c.round_introduced}, {c.eval_status}) "
        f"quality={c.quality_score:+.3f} cost={c.cost:+.3f}{acc_s}\n\n{c.prompt}"
    )


def viz_data(state: SearchState) -> VizData:
    elite = set(state.elite)
    by_round: dict[int, list[Candidate]] = {}
    for c in state.candidates.values():
        by_round.setdefault(c.round_introduced, []).append(c)
    tallest = max([1, *(len(v) for v in by_round.values())])
    height = 2 * _PAD + _ROW * tallest
    nodes = [Node(ROOT_VERSION, _PAD, height / 2, "base", "base: the baseline prompt")]
    for rnd in sorted(by_round):
        col = by_round[rnd]
        top = (height - _ROW * (len(col) - 1)) / 2
        for i, c in enumerate(col):
            nodes.append(
                Node(
                    c.prompt_version,
                    _PAD + _COL * rnd,
                    top + _ROW * i,
                    _status(c, elite),
                    _tooltip(c),
                )
            )
    edges: list[tuple[str, str, bool]] = []
    for c in state.candidates.values():
        if c.parent_version:
            edges.append((c.parent_version, c.prompt_version, False))
        if c.secondary_parent_version:
            edges.append((c.secondary_parent_version, c.prompt_version, True))
    width = 2 * _PAD + _COL * max([1, *by_round])
    return VizData(nodes, edges, width, height)


def _tree_svg(data: VizData) -> str:
    pos = {n.version: (n.x, n.y) for n in data.nodes}
    parts = [f'<svg width="{data.width}" height="{data.height}" role="img">']
    for a, b, secondary in data.edges:
        if a in pos and b in pos:
            (x1, y1), (x2, y2) = pos[a], pos[b]
            dash = ' stroke-dasharray="5,4"' if secondary else ""
            parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" class="edge"{dash}/>')
    for n in data.nodes:
        parts.append(
            f'<g class="node {n.status}"><title>{escape(n.tooltip)}</title>'
            f'<circle cx="{n.x}" cy="{n.y}" r="15"/>'
            f'<text x="{n.x}" y="{n.y + 4}">{escape(n.version)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _plane_svg(state: SearchState) -> str:
    scored = [c for c in state.candidates.values() if c.scored]
    if not scored:
        return "<p>No scored candidates yet.</p>"
    ref = state.algorithm_state.reference_point
    qs = [c.quality_score for c in scored] + [0.0] + ([ref[0]] if ref else [])
    cs = [c.cost for c in scored] + [0.0] + ([ref[1]] if ref else [])
    q0, q1 = min(qs), max(qs)
    c0, c1 = min(cs), max(cs)
    q_span, c_span = (q1 - q0) or 1.0, (c1 - c0) or 1.0

    def xy(q: float, c: float) -> tuple[float, float]:
        x = _PAD + (c - c0) / c_span * (_PLOT_W - 2 * _PAD)
        y = _PLOT_H - _PAD - (q - q0) / q_span * (_PLOT_H - 2 * _PAD)
        return round(x, 1), round(y, 1)

    parts = [f'<svg width="{_PLOT_W}" height="{_PLOT_H}" role="img">']
    bx, by = xy(0.0, 0.0)
    parts.append(f'<line x1="{_PAD}" y1="{by}" x2="{_PLOT_W - _PAD}" y2="{by}" class="axis"/>')
    parts.append(f'<line x1="{bx}" y1="{_PAD}" x2="{bx}" y2="{_PLOT_H - _PAD}" class="axis"/>')
    front = sorted(compute_pareto_front(scored), key=lambda c: c.cost)
    if len(front) > 1:
        pts = " ".join(f"{x},{y}" for x, y in (xy(c.quality_score, c.cost) for c in front))
        parts.append(f'<polyline points="{pts}" class="front"/>')
    elite = set(state.elite)
    for c in scored:
        x, y = xy(c.quality_score, c.cost)
        cls = "elite" if c.prompt_version in elite else "complete"
        parts.append(
            f'<g class="node {cls}"><title>{escape(_tooltip(c))}</title>'
            f'<circle cx="{x}" cy="{y}" r="6"/>'
            f'<text x="{x + 9}" y="{y - 7}">{escape(c.prompt_version)}</text></g>'
        )
    if ref:
        x, y = xy(*ref)
        parts.append(
            f'<g class="ref"><title>reference point {ref}</title>'
            f'<rect x="{x - 4}" y="{y - 4}" width="8" height="8"/></g>'
        )
    parts.append(
        f'<text x="{_PLOT_W / 2}" y="{_PLOT_H - 8}">cost change (lower is better) →</text>'
        f'<text x="6" y="{_PAD - 16}">↑ quality change</text></svg>'
    )
    return "".join(parts)


def _rounds_table(state: SearchState) -> str:
    head = (
        "<tr><th>round</th><th>evaluated</th><th>elite</th><th>hypervolume</th>"
        "<th>rel. improvement</th><th>stagnation</th><th>epsilon</th><th>mode</th>"
        "<th>backtracking</th><th>converged</th></tr>"
    )
    rows = []
    for r in state.round_history:
        rel = "n/a" if r.relative_improvement is None else f"{r.relative_improvement:+.4f}"
        cells = [
            r.round,
            ", ".join(r.candidates_evaluated),
            ", ".join(r.elite),
            f"{r.hypervolume:.5f}",
            rel,
            r.stagnation_count,
            r.epsilon,
            r.mutation_mode,
            r.backtracking,
            r.convergence_reason or "",
        ]
        rows.append("<tr>" + "".join(f"<td>{escape(str(x))}</td>" for x in cells) + "</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def _candidates_table(state: SearchState) -> str:
    rows = []
    for c in state.candidates.values():
        acc = c.metrics.get("accuracy", "")
        why = "; ".join(f"{k}: {v}" for k, v in c.rationale.items() if k != "reply" and v)
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{escape(str(x))}</td>"
                for x in (
                    c.prompt_version,
                    c.parent_version or "",
                    c.secondary_parent_version or "",
                    c.round_introduced,
                    c.eval_status,
                    f"{c.quality_score:+.3f}",
                    f"{c.cost:+.3f}",
                    acc,
                )
            )
            + f"<td><details><summary>prompt</summary><pre>{escape(c.prompt)}</pre>"
            f"<p>{escape(why)}</p></details></td></tr>"
        )
    head = (
        "<tr><th>version</th><th>parent</th><th>2nd parent</th><th>round</th><th>status</th>"
        "<th>quality</th><th>cost</th><th>accuracy</th><th>prompt</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>"


_CSS = """body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;
vertical-align:top;font-size:13px}pre{white-space:pre-wrap;max-width:70em}
.edge{stroke:#888;stroke-width:1.5}.axis{stroke:#bbb}.front{fill:none;stroke:#2a7;stroke-width:2}
.node circle{stroke:#333;fill:#eee}.node text{font-size:11px;text-anchor:middle}
.elite circle{fill:#8d8}.failed circle{fill:#e88}.base circle{fill:#9bd}
.pending circle,.running circle{fill:#fff}.ref rect{fill:#c55}"""


def render_viz(state: SearchState) -> str:
    data = viz_data(state)
    status = (
        f"converged ({state.convergence_reason})"
        if state.converged
        else f"round {state.current_round}, phase {state.loop_phase}"
    )
    base = state.baseline
    base_line = ", ".join(f"{k}={v}" for k, v in base.items() if k != "per_example")
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f"<title>search {escape(state.run_id)}</title><style>{_CSS}</style></head><body>"
        f"<h1>Prompt search {escape(state.run_id)}</h1><p>{escape(status)}; "
        f"baseline: {escape(base_line)}</p>"
        "<h2>Candidate tree</h2><p>green: elite (current front); dashed: merge parent; "
        "hover a node for its prompt.</p>"
        f"{_tree_svg(data)}<h2>Cost / quality plane</h2>{_plane_svg(state)}"
        f"<h2>Rounds</h2>{_rounds_table(state)}<h2>Candidates</h2>{_candidates_table(state)}"
        "</body></html>"
    )
