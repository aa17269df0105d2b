"""``GroundedAnswer``, the multihop system's gold-free answer check: its rule by hand, its place
on the answer generator (a cascade applies it; the local reward's items leave it unweighed),
and a real trace of the committed HotpotQA table."""

from __future__ import annotations

from pathlib import Path

import pytest

from coalign.pairs import PreferencePair
from coalign.rewards._checks import evidence
from coalign.systems import multihop_qa
from coalign.systems._grounded import GroundedAnswer

ROOT = Path(__file__).resolve().parents[1]
PASSAGES = ["Kirton End is a hamlet in the civil parish of Kirton, near Boston.",
            {"title": "Boston", "text": "Boston, Lincolnshire, had 35,124 people in 2001."}]
CHECK = GroundedAnswer()


@pytest.mark.parametrize(("question", "answer", "expected"), [
    ("What was the population?", "35,124", 1.0),          # a span; punctuation aside
    ("Which town is it near?", "Boston", 1.0),            # read from a {"title", "text"} passage
    ("Which civil parish?", "the civil parish of Kirton", 1.0),  # articles, filler aside
    ("Is Kirton End a hamlet?", "Yes.", 1.0),              # yes/no needs no span
    ("Which town is it near?", "Paris", 0.0),             # made up
    ("Which town is it near?", "Boston, Paris", 0.0),     # partly made up
    ("Where is Kirton End?", "Kirton End", 0.0),          # the question's own entity echoed
    ("Kirton End or Boston: which is a hamlet?", "Kirton End", 1.0),  # offered as an option
    ("Which town is it near?", "", 0.0),                  # no answer
    ("Which town?", "Kirton End is a hamlet of the civil parish near Boston", 0.0),  # a sentence
])
def test_an_answer_passes_when_it_is_a_short_span_of_the_passages(question, answer, expected):
    assert CHECK({"question": question, "passages": PASSAGES}, {"answer": answer}) == expected


def test_a_text_source_works_and_a_missing_field_leaves_the_check_out():
    check = GroundedAnswer(source="info", most_words=2)
    who = {"question": "Who?", "info": "It was Ada Lovelace, Countess."}
    assert check(who, {"answer": "Ada Lovelace"}) == 1.0
    assert check(who, {"answer": "Countess Ada Lovelace"}) == 0.0  # over most_words
    assert check({"question": "Who?"}, {"answer": "Ada"}) is None  # no source: does not apply
    assert check({"question": "Who?", "info": "Ada"}, {}) is None   # no answer field


def test_the_answer_generator_declares_it_and_its_own_pairs_leave_it_unweighed():
    task = multihop_qa()
    answer = next(c for c in task.system.components if c.name == "answer_generator")
    assert [c.name for c in answer.checks] == ["grounded_answer:answer<-passages"]
    # the local reward's items are the component's inputs (question, info) and its output:
    # the passages are not there, so the check separates no pair and weighs nothing
    pair = PreferencePair("answer_generator", "q1", {"question": "Which town?", "info": "Boston"},
                          {"answer": "Boston"}, {"answer": "Paris"}, 1.0, 0.0, "a")
    found = evidence(answer.checks[0], [pair] * 5)
    assert found.separated == 0 and found.weight == 0.0


def test_a_cascade_reads_it_on_a_real_trace_of_the_hotpotqa_table():
    from coalign.cascade import check_output
    from coalign.runner import evaluate
    from coalign.runtime import Runtime
    from coalign.tables import Table

    table = Table(ROOT / "benchmarks" / "tables" / "multihop_qa_models")
    task = table.space.task()
    examples = table.finished()[:12]
    traces = evaluate(task, examples, task.system.default_config(),
                      Runtime(lms=table.lms(), max_workers=1, seed=0)).traces
    got = [check_output(task, t) for t in traces]
    assert set(got) <= {0.0, 1.0} and len(set(got)) == 2  # some answers pass, some fail
    for trace, value in zip(traces, got, strict=True):
        assert value == CHECK({**trace.inputs, **trace.state}, {"answer": trace.state["answer"]})


def test_a_hotpotqa_run_fits_and_runs_its_cascade_on_the_check(tmp_path):
    from coalign.cascade import passes
    from coalign.job import Job, parse_run_config

    raw = {"system": "multihop_qa", "data": "hotpotqa",
           "lm": f"replay:{ROOT / 'benchmarks' / 'tables' / 'multihop_qa_models'}",
           "backbone": "hashing", "split": {"train": 6, "val": 12, "test": 12, "seed": 1},
           "budget": {"iterations": 8, "rollout_n": 0, "proposals": "local"}}
    job = Job.open(parse_run_config(raw), tmp_path / "run")
    job.optimizer.run()
    fit = job.fit_cascade(depth=1)
    assert fit.cascade.configs[0] == job.optimizer.config and len(fit.cascade.configs) == 2
    res = job.cascade_on_test(fit.cascade)
    first = {t.example_id: t for t in job.on_test(job.optimizer.config, {}).traces}
    ran = dict(zip([e.id for e in job.test], res.ran, strict=True))
    # an answer that passes stands; one that fails runs the fallback
    assert {i: 1 if passes(job.task, first[i]) else 2 for i in ran} == ran
    assert 0 < res.escalated < 1
    job.store.close()
