"""viz.html: self-contained, escaped, and drawn from the right data."""

from __future__ import annotations

import re

from coalign.search import Candidate, SearchState, render_viz, viz_data

EVIL = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'


def sample_state() -> SearchState:
    st = SearchState(run_id="<b>run</b>")
    st.candidates["v1"] = Candidate(
        prompt_version="v1",
        prompt=EVIL,
        quality_score=0.1,
        cost=0.2,
        eval_status="complete",
        metrics={"accuracy": 0.5},
        rationale={"failure": "<script>bad()</script>"},
    )
    st.candidates["v2"] = Candidate(
        prompt_version="v2",
        parent_version="v1",
        secondary_parent_version="base",
        round_introduced=2,
        prompt="plain",
        quality_score=0.2,
        cost=-0.1,
        eval_status="complete",
    )
    st.candidates["v3"] = Candidate(
        prompt_version="v3", parent_version="v2", round_introduced=3, eval_status="failed"
    )
    st.elite = ["v2"]
    st.algorithm_state.reference_point = (-0.1, 0.3)
    return st


def test_viz_escapes_candidate_text_and_is_self_contained():
    html = render_viz(sample_state())
    assert "<script" not in html.lower()  # neither ours nor the candidate's
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;b&gt;run&lt;/b&gt;" in html and "<b>run</b>" not in html
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", html)  # no network fetch
    assert "http://" not in html and "https://" not in html and "@import" not in html


def test_viz_data_layout_and_edges():
    data = viz_data(sample_state())
    by = {n.version: n for n in data.nodes}
    assert set(by) == {"base", "v1", "v2", "v3"}
    assert by["base"].x < by["v1"].x < by["v2"].x < by["v3"].x  # one column per round
    assert (by["v2"].status, by["v1"].status, by["v3"].status) == ("elite", "complete", "failed")
    assert ("v1", "v2", False) in data.edges and ("base", "v2", True) in data.edges
    assert EVIL in by["v1"].tooltip  # raw in the data, escaped only when rendered
