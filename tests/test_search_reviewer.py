"""The prompt builder, the LLM reviewer (with a scripted fake LM) and the PubMedQA adapter."""

from __future__ import annotations

import re

import pytest

from coalign.search import (
    BeamSearch,
    ChildSlot,
    Demo,
    EditDirective,
    LLMReviewer,
    PromptSpec,
    SearchState,
    SearchStore,
    Targets,
    apply_directives,
    compile_prompt,
    failure_cells,
    parse_review,
)
from coalign.search._pubmedqa import PubMedQATask, base_spec, load_sets, tail_words
from tests.fakes import FakeLM

DEMOS = {
    f"d{i}": Demo(f"d{i}", f"demo text {i}", lab)
    for i, lab in enumerate(["yes", "no", "maybe", "yes", "no"])
}


def test_compile_uses_fixed_section_order():
    spec = PromptSpec("Obj.", ("yes: supported",), ("rule one",), (DEMOS["d0"],), "One word.")
    text = compile_prompt(spec)
    heads = re.findall(r"^## (.+)$", text, re.M)
    assert heads == ["Objective", "Categories", "Decision Logic", "Examples", "Output Format"]
    assert compile_prompt(PromptSpec("Obj.")) == "## Objective\nObj."


def test_directives_targeted_exploratory_and_merge():
    parent = PromptSpec("Obj.", (), ("old rule",), (DEMOS["d0"],), "fmt")
    other = PromptSpec("Obj.", (), ("other rule",), (DEMOS["d1"],), "fmt")
    ds = [
        EditDirective("rule", "new  rule"),
        EditDirective("vocabulary", "maybe: unclear"),
        EditDirective("contrast_pair", "", ("d2", "d3")),
        EditDirective("output_schema", "Say yes, no or maybe."),
    ]
    t = apply_directives(parent, ds, DEMOS.__getitem__, "targeted")
    assert t.decision_logic == ("old rule", "new rule")
    assert t.categories == ("maybe: unclear",)
    assert t.example_ids == ["d0", "d2", "d3"] and t.output_format == "Say yes, no or maybe."
    e = apply_directives(parent, ds[:1], DEMOS.__getitem__, "exploratory")
    assert e.decision_logic == ("new rule",) and e.examples == ()
    m = apply_directives(parent, ds[:1], DEMOS.__getitem__, "targeted", secondary=other)
    assert m.decision_logic == ("old rule", "other rule", "new rule")
    assert m.example_ids == ["d0", "d1"]
    with pytest.raises(ValueError):
        EditDirective("poem", "x")


def test_parse_review_fields_and_fallback():
    f = parse_review('FAILURE: says no\n**Hypothesis**: ids 12, 13 hedge\nRULE: "Prefer maybe."\n')
    assert f == {"failure": "says no", "hypothesis": "ids 12, 13 hedge", "rule": "Prefer maybe."}
    assert parse_review("Answer maybe when results are mixed.")["rule"].startswith("Answer")
    assert parse_review("ok") == {}
    echoed = parse_review(
        "FAILURE: said no on 7 of 12, e.g.:\n[123] Question: is it so? Context: ..."
    )
    assert "rule" not in echoed and echoed["failure"].startswith("said no")
    meta = parse_review("RULE: Add a rule to the instructions that states that the answer is no.")
    assert meta["rule"] == "The answer is no."
    wrapped = parse_review('RULE: Add the imperative sentence "Say yes when it works." to it.')
    assert wrapped["rule"] == "Say yes when it works."


def test_failure_cells_ranked_and_cold_start():
    recs = [
        {"id": str(i), "gold": g, "pred": p}
        for i, (g, p) in enumerate(
            [("yes", "no"), ("yes", "no"), ("maybe", "no"), ("no", "no"), ("maybe", "yes")]
        )
    ]
    cells = failure_cells(recs, ("yes", "no", "maybe"))
    assert [c.name for c in cells] == ["yes->no", "maybe->no", "maybe->yes"]
    assert cells[0].example_ids == ("0", "1")
    assert [c.name for c in failure_cells([], ("yes", "no"))] == ["missed yes", "missed no"]


@pytest.fixture(scope="module")
def sets(shared_data):
    return load_sets(6, 12, seed=0, path=str(shared_data / "pubmedqa" / "pqal_train500.json"))


def test_pubmedqa_adapter_scores_and_counts_tokens(sets):
    dev, pool = sets
    lm = FakeLM(lambda r: "Maybe, it depends." if "maybe" in r.messages[0].content else "No.")
    task = PubMedQATask(lm, dev, pool, context_words=20)
    ev = task.evaluate("Answer no.")
    assert ev.quality == pytest.approx(sum(e.target == "no" for e in dev) / len(dev))
    assert [r["pred"] for r in ev.metrics["per_example"]] == ["no"] * len(dev)
    assert ev.cost > 20 and lm.calls == len(dev)
    assert tail_words("a b c d", 2) == "... c d"
    demo = task.demos("maybe", 1, exclude=[])
    assert demo and demo[0].label == "maybe" and demo[0].id not in {e.id for e in dev}


def test_reviewer_children_differ_by_cell_and_tier(sets):
    dev, pool = sets
    replies = iter([f"FAILURE: f{i}\nHYPOTHESIS: h{i}\nRULE: rule number {i}." for i in range(9)])
    lm = FakeLM(lambda r: next(replies))
    task = PubMedQATask(FakeLM(lambda r: "yes"), dev, pool)
    st = SearchState(base_spec=base_spec().to_dict(), current_round=1)
    props = LLMReviewer(lm, task).propose(st, [ChildSlot("base", i) for i in range(3)])
    assert [p.rationale["cell"] for p in props] == ["missed yes", "missed no", "missed maybe"]
    # cold-start seeds span cost regions: rule only, +1 demo, +contrast pair
    assert [len(p.spec.examples) for p in props] == [0, 1, 2]
    assert [p.rationale["directives"] for p in props] == [
        ["rule"],
        ["rule", "example"],
        ["rule", "contrast_pair"],
    ]
    assert all("## Decision Logic\n1. Rule number" in p.prompt for p in props)


def test_end_to_end_with_fake_lms(sets, tmp_path):
    """Pure-logic wiring check (fake task model), not a reported figure."""
    dev, pool = sets
    task = PubMedQATask(
        FakeLM(lambda r: "maybe" if "Prefer" in r.messages[0].content else "yes"), dev, pool
    )
    reviewer = LLMReviewer(FakeLM(lambda r: "FAILURE: x\nHYPOTHESIS: y\nRULE: Prefer maybe."), task)

    def new_state():
        return SearchState(
            fingerprint="x",
            max_rounds=3,
            base_spec=base_spec().to_dict(),
            targets=Targets(quality_min=0.1),
        )

    st = BeamSearch.open(SearchStore(tmp_path), task, reviewer, new_state).run()
    assert st.converged and st.convergence_reason == "max_rounds"
    assert len(st.round_history) == 3 and st.total_evaluated() <= 3 * 3
    assert len(st.round_history[0].candidates_evaluated) == 3
    assert all(c.eval_status == "complete" for c in st.candidates.values())
    prompts = [c.prompt for c in st.candidates.values()]
    assert len(set(prompts)) == len(prompts)  # a repeated rule leads to a demo, never a clone


def test_public_api_is_exported():
    import coalign.search as search

    assert sorted(search.__all__) == sorted(set(search.__all__))
    for name in search.__all__:
        assert getattr(search, name) is not None
    for name in (
        "dominates",
        "compute_pareto_front",
        "crowding_distance",
        "prune_to_size",
        "compute_hypervolume",
    ):
        assert name in search.__all__


@pytest.mark.llm
def test_pubmedqa_with_local_llm(sets):
    """Two questions through the bundled model: answers parse to labels, tokens are counted."""
    from coalign.lm import make_lm

    dev, pool = sets
    task = PubMedQATask(make_lm("llamacpp:qwen2.5-0.5b"), dev[:2], pool, context_words=20)
    ev = task.evaluate(compile_prompt(base_spec()))
    assert 0.0 <= ev.quality <= 1.0 and ev.cost > 30
    assert all(r["pred"] in ("yes", "no", "maybe", "none") for r in ev.metrics["per_example"])
