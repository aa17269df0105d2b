"""The pool a model-choice space is built over: the donor's, a probe outside it, or grown."""

import pytest

from benchmarks.model_spaces import _pool
from coalign.tables import CandidateSpace, Samples


def _donor() -> CandidateSpace:
    return CandidateSpace(system="code_gen", dataset="mbpp", questions=("q2", "q0"),
                          params={"executor.keep": (3, 0)}, options={}, samples=Samples(0, 1.0),
                          notes={"pool": "two questions"})


IDS = ["q0", "q1", "q2", "q3", "q4"]


def test_the_donor_pool_is_kept_by_default() -> None:
    notes: dict = {}
    assert _pool(_donor(), notes, 0, IDS, "w") == ("q2", "q0")
    assert notes["pool"] == "two questions"


def test_a_probe_takes_questions_outside_the_pool_only() -> None:
    notes: dict = {}
    assert _pool(_donor(), notes, 2, IDS, "the probe") == ("q1", "q3")
    assert "headroom probe: the probe" in notes["pool"]


def test_grow_keeps_the_pool_first_and_appends_the_next_outside_questions() -> None:
    notes: dict = {}
    assert _pool(_donor(), notes, 0, IDS, "three more", grow=3) == ("q2", "q0", "q1", "q3", "q4")
    assert notes["pool"] == "two questions, then three more"


def test_grow_past_the_dataset_and_grow_with_probe_are_refused() -> None:
    with pytest.raises(ValueError, match="only 3 questions lie outside"):
        _pool(_donor(), {}, 0, IDS, "w", grow=4)
    with pytest.raises(ValueError, match="exclude each other"):
        _pool(_donor(), {}, 1, IDS, "w", grow=1)
