"""A table restricted to some of its finished questions replays exactly like the source."""

from __future__ import annotations

from pathlib import Path

import pytest

from coalign.errors import ConfigError
from coalign.tables import Table
from coalign.tables._subset import subset_table

HOTPOT = Path(__file__).resolve().parents[1] / "benchmarks" / "tables" / "multihop_qa"


def test_subset_replays_the_source_rewards_on_its_questions(tmp_path):
    src = Table(HOTPOT)
    first = [e.id for e in src.finished()][:2]
    sub = subset_table(HOTPOT, tmp_path / "sub", questions=2)
    assert list(sub.space.questions) == first
    assert sub.space.digest == src.space.digest  # the pool is not part of the identity
    assert [e.id for e in sub.finished()] == first
    assert {e.question for e in sub.shards.entries.values()} == set(first)
    # its notes say which part of the source's pool it holds
    assert sub.space.notes["pool"].startswith("the first 2 finished questions of multihop_qa's")
    task = src.space.task()
    configs = list(src.space.configs(task))[:24]
    from coalign.runtime import Runtime
    from coalign.tables._rewards import compute_rewards

    def rewards(table: Table):
        return compute_rewards(task, configs, table.finished()[:2],
                               Runtime(lms=table.lms(), max_workers=1, seed=0)).scores.tolist()

    # every path of the subset replays without a miss, to the source's rewards
    assert rewards(sub) == rewards(src)


def test_subset_by_ids_keeps_their_order(tmp_path):
    ids = [e.id for e in Table(HOTPOT).finished()][:3]
    sub = subset_table(HOTPOT, tmp_path / "sub", questions=[ids[2], ids[0]])
    assert list(sub.space.questions) == [ids[2], ids[0]]
    assert sub.space.notes["pool"].startswith("chosen: 2 finished questions of multihop_qa's")


@pytest.mark.parametrize("questions, match", [
    (10_000, "questions asked"),
    (["no-such-question"], "not finished"),
    (0, "questions asked"),
])
def test_subset_refuses_what_it_cannot_write(tmp_path, questions, match):
    with pytest.raises(ConfigError, match=match):
        subset_table(HOTPOT, tmp_path / "sub", questions=questions)
    assert not (tmp_path / "sub").exists()


def test_subset_never_overwrites_a_table(tmp_path):
    subset_table(HOTPOT, tmp_path / "sub", questions=1)
    with pytest.raises(ConfigError, match="not empty"):
        subset_table(HOTPOT, tmp_path / "sub", questions=1)
    assert [p.name for p in tmp_path.iterdir()] == ["sub"]  # no temp folder left behind
