"""Pinned step outcomes: a sandboxed run whose result varies from run to run is kept by the
table that saw it, so a replay asks the requests the table holds (a fake LM answers the code
prompts; the sandbox is the real one)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from coalign.runner import load_dataset
from coalign.runtime import RunContext, Runtime
from coalign.systems._code import GENERATE, REVISE, WRITE_TESTS
from coalign.tables import (
    CandidateSpace,
    Samples,
    ShardSet,
    Table,
    build_table,
    pin_table,
    subset_table,
)
from coalign.tables._rewards import compute_rewards
from coalign.tables._shards import Outcome
from tests.fakes import FakeLM

# In half the sandbox runs f() is 1 and the generated test passes, in the other half it is 2 and
# fails: the executor's feedback, which the reviser's request quotes, is a coin flip per run.
COIN = "```python\nimport random\n\nSIDE = random.choice([1, 2])\n\ndef f():\n    return SIDE\n```"
FIXED = "```python\ndef f():\n    return 1\n```"


def _answer(request) -> str:
    text = " ".join(m.content for m in request.messages)
    if GENERATE in text:
        return COIN
    if WRITE_TESTS in text:
        return "assert f() == 1"
    assert REVISE in text
    return FIXED


def make_space(n: int = 2) -> CandidateSpace:
    ids = tuple(e.id for e in load_dataset("mbpp", limit=n))
    return CandidateSpace(
        system="code_gen", dataset="mbpp", questions=ids,
        params={"code_generator.prompt": ({"instruction": GENERATE, "demos": []},),
                "test_generator.prompt": ({"instruction": WRITE_TESTS, "demos": []},),
                "executor.keep": (3, 0),
                "reviser.prompt": ({"instruction": REVISE, "demos": []},),
                "reviser.sees_code": (True,)},
        options={"layout": "inputs_first"}, samples=Samples(0, 1.0))


def build(directory: Path) -> CandidateSpace:
    space = make_space()
    space.save(directory)
    build_table(directory, lm_factory=lambda m: FakeLM(_answer, name=f"llamacpp:{m}"))
    return space


def unpinned_copy(src: Path, dst: Path) -> None:
    """The table as a build before pinning wrote it: responses and done marks only."""
    table = Table(src)
    table.space.save(dst)
    shards = ShardSet(dst, table.space.system, table.space.digest, writer=True)
    for key, entry in table.shards.entries.items():
        shards.append(key, entry)
    for done in table.shards.done.values():
        shards.mark_done(done)
    shards.close()


def replayed_feedback(table: Table) -> list[str]:
    """The executor's feedback on every path of every question, replayed."""
    task = table.space.task()
    configs = list(table.space.configs(task))
    runtime = table.runtime()
    return [task.system.run(e.id, e.inputs, c, runtime).state["feedback"]
            for e in table.finished() for c in configs]


class DictLog:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.puts: list[tuple[str, str]] = []

    def get(self, key: str) -> Any | None:
        return self.values.get(key)

    def put(self, key: str, value: Any, component: str, question: str) -> None:
        self.values[key] = value
        self.puts.append((component, question))


def test_pinned_computes_once_under_a_log_and_every_time_without() -> None:
    calls: list[int] = []

    def compute() -> str:
        calls.append(1)
        return f"run {len(calls)}"

    log = DictLog()
    ctx = RunContext(Runtime(outcomes=log), "executor", "q1", 0)
    assert ctx.pinned(["sandbox", "code", ["t"]], compute) == "run 1"
    assert ctx.pinned(["sandbox", "code", ["t"]], compute) == "run 1"  # the log's, not rerun
    assert ctx.pinned(["sandbox", "other", ["t"]], compute) == "run 2"
    assert log.puts == [("executor", "q1"), ("executor", "q1")]
    bare = RunContext(Runtime(), "executor", "q1", 0)
    assert [bare.pinned(["sandbox", "code", ["t"]], compute) for _ in range(2)] == \
        ["run 3", "run 4"]


def test_outcomes_and_marks_survive_sealing_a_kill_and_reloading(tmp_path: Path) -> None:
    shards = ShardSet(tmp_path, "code_gen", "abc", writer=True)
    shards.append_outcome("k1", Outcome("0/1 tests passed.", "executor", "q1"))
    shards.append_outcome("k1", Outcome("another", "executor", "q1"))  # the first one stays
    shards.mark_pinned("q1")
    shards._journal.close()  # killed before sealing: the next writer seals the journal
    shards._journal = None
    again = ShardSet(tmp_path, "code_gen", "abc", writer=True)
    assert again.outcomes == {"k1": Outcome("0/1 tests passed.", "executor", "q1")}
    assert again.pinned == {"q1"}
    again.close()
    read = ShardSet(tmp_path, "code_gen", "abc")
    assert read.outcomes["k1"].value == "0/1 tests passed." and read.pinned == {"q1"}


def test_a_build_pins_what_its_walk_saw_and_replays_it_every_time(tmp_path: Path) -> None:
    build(tmp_path)
    table = Table(tmp_path)
    assert table.shards.pinned == set(table.space.questions)
    # keep 3 runs the coin-flip test, keep 0 only the example test: two runs a question
    assert len(table.shards.outcomes) == 2 * len(table.space.questions)
    assert {o.component for o in table.shards.outcomes.values()} == {"executor"}
    first = replayed_feedback(table)
    # live, the coin would make some of these replays ask a request the table lacks
    assert all(replayed_feedback(Table(tmp_path)) == first for _ in range(4))
    assert "step outcomes pinned for 2 questions (4 outcomes)" in table.status().lines()


def test_replay_reads_the_pinned_outcome_not_a_fresh_run(tmp_path: Path) -> None:
    space = build(tmp_path)
    table = Table(tmp_path)
    assert all(replayed_feedback(table))  # every run fails the example test (no such name)
    for key, o in list(table.shards.outcomes.items()):  # in memory only: the files are sealed
        table.shards.outcomes[key] = dataclasses.replace(o, value="")  # as if it had passed
    assert replayed_feedback(table) == [""] * 2 * len(space.questions)


def test_pin_walks_again_until_the_table_s_requests_are_met(tmp_path: Path) -> None:
    build(tmp_path / "built")
    unpinned_copy(tmp_path / "built", tmp_path / "old")
    assert not Table(tmp_path / "old").shards.outcomes
    report = pin_table(tmp_path / "old", tries=40)
    assert report.pinned == report.pinned_now == report.finished == 2
    assert not report.failed and not report.unreached and report.outcomes == 4
    # the pins are the outcomes the build saw (each the one its reviser request quotes)
    old, built = Table(tmp_path / "old"), Table(tmp_path / "built")
    assert {k: o.value for k, o in old.shards.outcomes.items()} == \
        {k: o.value for k, o in built.shards.outcomes.items()}
    assert replayed_feedback(old) == replayed_feedback(built)
    again = pin_table(tmp_path / "old")
    assert again.pinned_now == 0 and again.pinned == 2


def test_pin_leaves_a_question_no_walk_can_replay_unpinned(tmp_path: Path) -> None:
    build(tmp_path / "built")
    unpinned_copy(tmp_path / "built", tmp_path / "old")
    table = Table(tmp_path / "old")
    key = next(k for k, e in table.shards.entries.items() if e.component == "reviser")
    question = table.shards.entries[key].question
    shards = ShardSet(tmp_path / "cut", table.space.system, table.space.digest, writer=True)
    for k, e in table.shards.entries.items():  # the table without one reviser response
        if k != key:
            shards.append(k, e)
    for done in table.shards.done.values():
        shards.mark_done(done)
    shards.close()
    table.space.save(tmp_path / "cut")
    report = pin_table(tmp_path / "cut", tries=3)
    assert question in report.failed and question not in Table(tmp_path / "cut").shards.pinned
    from tests.test_cli_core import run_cli

    cli = run_cli("table", "pin", str(tmp_path / "cut"), "--tries", "2")
    assert cli.returncode == 1 and question in cli.stderr and "left unpinned" in cli.stderr


def test_cli_pins_reports_and_names_what_it_could_not(tmp_path: Path) -> None:
    from tests.test_cli_core import one_line_error, run_cli

    build(tmp_path / "built")
    unpinned_copy(tmp_path / "built", tmp_path / "old")
    ok = run_cli("table", "pin", str(tmp_path / "old"), "--tries", "40")
    assert ok.returncode == 0, ok.stderr
    assert "2/2 finished questions pinned" in ok.stdout
    status = run_cli("table", "status", str(tmp_path / "old"))
    assert "step outcomes pinned for 2 questions (4 outcomes)" in status.stdout
    err = one_line_error(run_cli("table", "pin", str(tmp_path / "old"), "--minutes", "0"))
    assert "--minutes" in err


def test_subset_keeps_its_questions_outcomes_and_marks(tmp_path: Path) -> None:
    space = build(tmp_path / "built")
    sub = subset_table(tmp_path / "built", tmp_path / "sub", questions=1)
    first = space.questions[0]
    assert sub.shards.pinned == {first}
    assert {o.question for o in sub.shards.outcomes.values()} == {first}
    assert len(sub.shards.outcomes) == 2


def test_rewards_on_a_pinned_table_match_across_replays(tmp_path: Path) -> None:
    build(tmp_path)
    table = Table(tmp_path)
    task = table.space.task()
    configs = list(table.space.configs(task))

    def scores() -> list[list[float]]:
        return compute_rewards(task, configs, table.finished(), Table(tmp_path).runtime(
            max_workers=2)).scores.tolist()

    assert scores() == scores() == table.rewards().scores.tolist()


def test_pin_refuses_zero_tries(tmp_path: Path) -> None:
    from coalign.errors import ConfigError

    build(tmp_path)
    with pytest.raises(ConfigError, match="tries must be at least 1"):
        pin_table(tmp_path, tries=0)

