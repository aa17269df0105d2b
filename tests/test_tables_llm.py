"""Replay tables on the real local LLM: a killed build resumes from a fresh clone of its
committed shards with zero repeated calls and ends identical to an uninterrupted build; replay
then answers evaluations with no model loaded."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coalign.backends import build_runtime
from coalign.runner import evaluate
from coalign.systems._multihop import ANSWER, EXTRACT, REWRITE
from coalign.tables import CandidateSpace, Samples, ShardSet, Table, build_table, pool_examples

pytestmark = [pytest.mark.llm, pytest.mark.slow]


def tiny_space() -> CandidateSpace:
    from coalign.runner import load_dataset

    ids = tuple(e.id for e in load_dataset("hotpotqa", limit=3))
    text = lambda s: {"instruction": s, "demos": []}  # noqa: E731
    return CandidateSpace(
        system="multihop_qa", dataset="hotpotqa", questions=ids, model="smollm2-135m",
        params={"question_rewriter.prompt": (text(REWRITE),),
                "retriever.k": (1,),
                "info_extractor.prompt": (text(EXTRACT), text(EXTRACT + " Be concise.")),
                "answer_generator.prompt": (text(ANSWER), text(ANSWER + " Be concise."))},
        options={"ks": [1], "default_k": 1, "layout": "inputs_first"},
        samples=Samples(1, 0.9))


def entries(directory: Path, space: CandidateSpace) -> dict[str, str]:
    return {k: e.text for k, e in ShardSet(directory, space.system, space.digest).entries.items()}


def test_killed_build_resumes_from_fresh_clone_identically(tmp_path: Path) -> None:
    space = tiny_space()
    straight = tmp_path / "straight"
    space.save(straight)
    full = build_table(straight, level="samples")
    assert full.done == 3 and full.llm_calls == len(entries(straight, space))

    killed = tmp_path / "killed"
    space.save(killed)
    env = {**os.environ, "COALIGN_LM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "coalign", "table", "build", str(killed),
                             "--level", "samples", "--seal-every", "1"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not list((killed / "shards").glob("*.jsonl.gz")):  # the first question sealed
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "no shard sealed in 5 minutes"
        time.sleep(0.2)
    time.sleep(1.0)  # into the next question: its calls sit in the journal only
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    clone = tmp_path / "clone"  # a fresh clone has space.json and the committed shards only
    shutil.copytree(killed, clone, ignore=shutil.ignore_patterns("journal-*"))
    before = entries(clone, space)
    assert 0 < len(before) < len(entries(straight, space))
    resumed = build_table(clone, level="samples")
    after = entries(clone, space)
    assert resumed.llm_calls == len(after) - len(before)  # no call repeated
    assert after == entries(straight, space)  # identical table

    # replay: evaluations from the table alone, with the live run's accounting
    task = space.task()
    runtime, _ = build_runtime(["smollm2-135m"], None, lm=f"replay:{clone}", max_workers=1)
    config = task.system.default_config()
    result = evaluate(task, pool_examples(space), config, runtime)
    assert result.usage.calls == 3 * 3 and result.equiv_runs == pytest.approx(3.0)
    assert Table(clone).status().levels[1].done == 3
