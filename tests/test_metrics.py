"""Answer metrics against hand-computed values."""

from __future__ import annotations

import pytest

from coalign.data import (
    Example,
    accuracy,
    exact_match,
    extract_label,
    f1_score,
    get_metric,
    metric_names,
    normalize_answer,
)
from coalign.errors import ConfigError


def test_normalize_answer() -> None:
    assert normalize_answer("  The Battle of  Guam! ") == "battle of guam"
    assert normalize_answer("An apple, a day") == "apple day"
    # Articles only as whole words: "theatre" and "Anna" keep their letters.
    assert normalize_answer("Theatre Anna") == "theatre anna"
    assert normalize_answer("U.S.A.") == "usa"
    assert normalize_answer("") == ""


def test_f1_hand_computed() -> None:
    # pred tokens {battle, of, guam}, gold {battle, guam}: P = 2/3, R = 1, F1 = 0.8
    assert f1_score("the Battle of Guam", "Battle Guam") == pytest.approx(0.8)
    # pred "new york city" vs gold "york": P = 1/3, R = 1 -> 0.5
    assert f1_score("New York City", "York") == pytest.approx(0.5)
    # repeated tokens count with multiplicity: "a b b" vs "b": P = 1/2 ("a" is an article,
    # dropped), R = 1 -> 2/3
    assert f1_score("a b b", "b") == pytest.approx(2 / 3)
    assert f1_score("Paris", "London") == 0.0
    assert f1_score("", "London") == 0.0
    assert f1_score("London.", "london") == 1.0


def test_f1_yes_no_special_case() -> None:
    # "no" shares the token "no" with the gold, but yes/no answers score all or nothing.
    assert f1_score("no", "no way") == 0.0
    assert f1_score("yes it is", "yes") == 0.0
    assert f1_score("Yes.", "yes") == 1.0
    assert f1_score("noanswer", "no answer") == 0.0


def test_alias_takes_the_max() -> None:
    assert f1_score("Bombardier", "Bombardier Inc.") == pytest.approx(2 / 3)
    assert f1_score("Bombardier", "Bombardier Inc.", ["Bombardier"]) == 1.0
    assert exact_match("Bombardier", "Bombardier Inc.") == 0.0
    assert exact_match("the bombardier", "Bombardier Inc.", ["Bombardier"]) == 1.0
    assert exact_match("Bombardier Inc", "Bombardier Inc.") == 1.0


def test_extract_label_and_accuracy() -> None:
    assert extract_label("Yes, the trial shows a benefit.") == "yes"
    assert extract_label("The answer is: maybe; no clear evidence.") == "maybe"
    assert extract_label("I cannot tell.") is None
    assert extract_label("Option B", labels=["A", "B"]) == "b"
    assert accuracy("No, because the effect was small.", "no") == 1.0
    assert accuracy("yes", "no") == 0.0
    assert accuracy("It is unclear", "maybe") == 0.0
    assert accuracy("MAYBE", "maybe") == 1.0
    # Non-label golds need the whole answer to match (no first-word extraction).
    assert accuracy("B", "b") == 1.0
    assert accuracy("B or C", "b") == 0.0
    assert accuracy("I think B", "b", labels=["a", "b", "c"]) == 1.0


def test_registry_scores_examples() -> None:
    example = Example("1", {"question": "q"}, "Bombardier Inc.", {"answer_aliases": ["Bombardier"]})
    assert get_metric("f1")("Bombardier", example) == 1.0
    assert get_metric("em")("Bombardier Aerospace", example) == 0.0
    assert get_metric("f1")(None, example) == 0.0
    label = Example("2", {}, "yes")
    assert get_metric("accuracy")("Yes - clearly.", label) == 1.0
    assert metric_names() == ["accuracy", "em", "f1"]


def test_unknown_metric_lists_valid_names() -> None:
    with pytest.raises(ConfigError) as info:
        get_metric("rouge")
    assert str(info.value) == "metric: unknown name 'rouge'; choose one of accuracy, em, f1"
