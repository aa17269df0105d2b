"""Rendering of (description, x_k, y_k) and the cheap features."""

from __future__ import annotations

import pytest

from coalign.rewards import FEATURE_NAMES, N_FEATURES, RenderBudget, features, render

FILLER = "Unrelated filler sentence about weather in other places. " * 30
INPUTS = {
    "question": "Which battle occurred first, the Battle of Manila or the Battle of Guam?",
    "passages": [
        {
            "title": "Battle of Guam",
            "text": FILLER + "The Battle of Guam was fought in 1944. " + FILLER,
        },
        {"title": "Battle of Manila", "text": "The Battle of Manila took place in 1945. " + FILLER},
    ],
}


def test_output_comes_first_then_query_then_evidence() -> None:
    text = render("Answers from passages", INPUTS, {"answer": "Battle of Guam"})
    assert text.startswith("Answers from passages || output: answer: Battle of Guam || query:")
    assert text.index("query:") < text.index("evidence:")
    assert "[1] Battle of Guam:" in text and "[2] Battle of Manila:" in text


def test_long_evidence_is_cut_to_budget_keeping_the_supporting_sentence() -> None:
    text = render("Answers from passages", INPUTS, {"answer": "Battle of Guam"})
    assert len(text) < 1300  # fits MiniLM's 256 word pieces (≈ 4 characters each)
    # the sentence that mentions the output's words survives the cut though it is mid-passage
    assert "fought in 1944" in text


def test_long_output_is_clipped_with_ellipsis() -> None:
    out = {"answer": "word " * 500}
    text = render("d", {"question": "q?"}, out, RenderBudget(output=100))
    section = text.split(" || ")[1]
    assert len(section) <= 100 + len("output: ") + 20 and section.endswith("…")


def test_empty_output_is_visible() -> None:
    assert "output: answer: <empty>" in render("d", {"question": "q?"}, {"answer": ""})


def test_list_output_renders_as_compact_passages() -> None:
    out = {"passages": INPUTS["passages"]}
    text = render("Retriever", {"question": INPUTS["question"]}, out)
    assert text.split(" || ")[1].startswith("output: [1] Battle of Guam:")
    assert "evidence:" not in text  # the query alone is not evidence


def test_hotpotqa_title_sentences_context_item() -> None:
    ctx = [["Guam", ["Guam is an island.", "It was retaken in 1944."]]]
    text = render("d", {"question": "When?", "context": ctx}, {"answer": "1944"})
    assert "[1] Guam: Guam is an island. It was retaken in 1944." in text


def test_features_are_a_fixed_documented_vector() -> None:
    assert len(FEATURE_NAMES) == N_FEATURES == 10
    f = dict(zip(FEATURE_NAMES, features(INPUTS, {"answer": "Battle of Guam"}), strict=True))
    assert f["out_tokens"] == pytest.approx(0.03)
    assert f["out_empty"] == 0 and f["out_unknown"] == 0 and f["out_numeric"] == 0
    assert f["out_in_evidence"] == 1.0 and f["out_span_in_evidence"] == 1.0
    assert f["out_in_query"] == 1.0
    assert 0 < f["query_in_out"] < 1
    g = dict(zip(FEATURE_NAMES, features(INPUTS, {"answer": "Unknown, not in 1066"}), strict=True))
    assert g["out_unknown"] == 1 and g["out_numeric"] == 1 and g["out_span_in_evidence"] == 0
    e = dict(zip(FEATURE_NAMES, features(INPUTS, {"answer": ""}), strict=True))
    assert e["out_empty"] == 1 and e["out_tokens"] == 0 and e["out_in_evidence"] == 0


def test_package_exports_are_complete() -> None:
    import types

    import coalign.rewards as pkg

    public = {
        n
        for n, v in vars(pkg).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert public == set(pkg.__all__)


def test_evidence_repeated_in_the_output_is_not_shown_twice() -> None:
    paras = INPUTS["passages"]
    inputs = {"query": "Battle of Guam date", "paragraphs": paras}
    one = render("Retriever", inputs, {"passages": paras[:1]})
    both = render("Retriever", inputs, {"passages": paras})
    assert one.split("evidence: ")[1].startswith("[1] Battle of Manila:")
    assert "evidence:" not in both  # every paragraph was picked: nothing left out
