"""The search driver: state saved after every change; kill + resume equals an uninterrupted run."""

from __future__ import annotations

import hashlib
import json

import pytest

from coalign.errors import StoreError
from coalign.search import (
    BaseMutator,
    BeamSearch,
    CandidateFailed,
    Evaluation,
    PromptSpec,
    Proposal,
    SearchState,
    SearchStore,
    Targets,
    compile_prompt,
)
from coalign.search._persist import write_atomic

BASE = PromptSpec(objective="Classify.", output_format="One word.")


class Killed(Exception):
    """Stands in for a kill -9: nothing after the raise runs."""


class ScriptedEvaluator:
    """Scores are a pure function of the prompt text; can 'die' on its n-th call."""

    def __init__(self, die_at: int | None = None, fail_marker: str = "FAIL") -> None:
        self.calls = 0
        self.die_at = die_at
        self.fail_marker = fail_marker

    def evaluate(self, prompt: str) -> Evaluation:
        self.calls += 1
        if self.die_at is not None and self.calls == self.die_at:
            raise Killed(f"killed at evaluation {self.calls}")
        if self.fail_marker in prompt:
            raise CandidateFailed("scripted failure")
        h = int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16)
        quality = 0.5 + (h % 1000) / 4000  # 0.5 .. 0.75
        cost = float(len(prompt.split()))
        return Evaluation(quality, cost, {"per_example": [{"id": "e1", "gold": "a", "pred": "b"}]})


class ScriptedMutator(BaseMutator):
    """Adds a rule naming the slot; can 'die' on its n-th proposal batch."""

    def __init__(self, die_at: int | None = None) -> None:
        self.batches = 0
        self.die_at = die_at

    def propose(self, snapshot, slots):
        self.batches += 1
        if self.die_at is not None and self.batches == self.die_at:
            raise Killed("killed while proposing")
        out = []
        for i, s in enumerate(slots):
            parent = (
                BASE
                if s.parent == "base"
                else PromptSpec.from_dict(snapshot.candidates[s.parent].spec)
            )
            tag = "FAIL" if (snapshot.current_round, i) == (2, 1) else f"r{snapshot.current_round}"
            rule = f"rule {tag} {s.parent} {s.cell_rank} {s.secondary_parent}"
            spec = PromptSpec(
                parent.objective,
                parent.categories,
                (*parent.decision_logic, rule)[-3:],
                parent.examples,
                parent.output_format,
            )
            out.append(Proposal(s.parent, spec, compile_prompt(spec), s.secondary_parent))
        return out


def new_state() -> SearchState:
    st = SearchState(
        run_id="t",
        fingerprint="f1",
        evaluation_budget=12,
        max_rounds=6,
        stagnation_limit=1,
        convergence_limit=2,
        epsilon=0.01,
        targets=Targets(quality_min=0.2),
        base_spec=BASE.to_dict(),
    )
    st.algorithm_state.epsilon_min = 0.005
    return st


def run(folder, evaluator=None, mutator=None) -> SearchState:
    engine = BeamSearch.open(
        SearchStore(folder),
        evaluator or ScriptedEvaluator(),
        mutator or ScriptedMutator(),
        new_state,
    )
    return engine.run()


def comparable(folder) -> tuple[dict, list[dict]]:
    store = SearchStore(folder)
    return json.loads(store.state_path.read_text()), store.read_archive()


def test_uninterrupted_run_persists_everything(tmp_path):
    final = run(tmp_path)
    assert final.converged and final.convergence_reason in ("stagnation", "max_rounds")
    state, archive = comparable(tmp_path)
    assert state["converged"] and state["elite"] == final.elite
    assert [r["prompt_version"] for r in archive] == [
        v for r in final.round_history for v in r.candidates_evaluated
    ]  # one archive line per evaluated candidate, in order
    failed = [r for r in archive if r["eval_status"] == "failed"]
    assert len(failed) == 1 and failed[0]["round_introduced"] == 2
    assert (tmp_path / "viz.html").read_text().startswith("<!DOCTYPE html>")
    assert not list(tmp_path.glob(".*.tmp"))  # no temp files left behind


@pytest.mark.parametrize("die_at", [1, 2, 5, 9, 13])
def test_kill_mid_evaluation_then_resume_matches(tmp_path, die_at):
    run(tmp_path / "ref")
    with pytest.raises(Killed):
        run(tmp_path / "run", evaluator=ScriptedEvaluator(die_at=die_at))
    interrupted = SearchStore(tmp_path / "run").load()
    assert not interrupted.converged
    run(tmp_path / "run")  # resume: same folder, fresh objects
    assert comparable(tmp_path / "run") == comparable(tmp_path / "ref")


def test_kill_while_proposing_then_resume_matches(tmp_path):
    run(tmp_path / "ref")
    with pytest.raises(Killed):
        run(tmp_path / "run", mutator=ScriptedMutator(die_at=3))
    assert SearchStore(tmp_path / "run").load().current_round == 3
    run(tmp_path / "run")
    assert comparable(tmp_path / "run") == comparable(tmp_path / "ref")


def test_running_candidate_is_reevaluated_on_resume(tmp_path):
    with pytest.raises(Killed):
        run(tmp_path, evaluator=ScriptedEvaluator(die_at=3))
    st = SearchStore(tmp_path).load()
    assert [st.candidates[v].eval_status for v in st.pending] == ["complete", "running", "pending"]
    ev = ScriptedEvaluator()
    engine = BeamSearch.open(SearchStore(tmp_path), ev, ScriptedMutator(), new_state)
    assert engine.state.candidates["v2"].eval_status == "pending"
    engine.step()
    assert ev.calls == 1 and engine.state.candidates["v2"].eval_status == "complete"


def test_resume_refuses_other_configuration(tmp_path):
    run(tmp_path)

    def other() -> SearchState:
        st = new_state()
        st.fingerprint = "f2"
        return st

    with pytest.raises(StoreError, match="different configuration"):
        BeamSearch.open(SearchStore(tmp_path), ScriptedEvaluator(), ScriptedMutator(), other)


def test_archive_append_is_idempotent_and_survives_torn_tail(tmp_path):
    final = run(tmp_path)
    store = SearchStore(tmp_path)
    before = store.read_archive()
    assert store.append_archive(list(final.candidates.values()), 99) == 0
    with store.archive_path.open("a") as f:
        f.write('{"prompt_version": "v99", "trunc')  # a kill mid-line
    assert store.read_archive() == before
    extra = final.candidates["v1"].model_copy(update={"prompt_version": "v100"})
    assert store.append_archive([extra], 99) == 1
    assert [r["prompt_version"] for r in store.read_archive()] == [
        *(r["prompt_version"] for r in before),
        "v100",
    ]


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "search_state.json"
    write_atomic(target, "old")

    def boom(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr("coalign.search._persist.os.replace", boom)
    with pytest.raises(OSError):
        write_atomic(target, "new")
    assert target.read_text() == "old" and not list(tmp_path.glob(".*.tmp"))


def test_corrupt_state_is_a_one_line_store_error(tmp_path):
    (tmp_path / "search_state.json").write_text("{not json")
    with pytest.raises(StoreError) as err:
        SearchStore(tmp_path).load()
    assert "\n" not in str(err.value) and "search_state.json" in str(err.value)


def test_duplicate_proposals_are_dropped(tmp_path):
    class Repeats(ScriptedMutator):
        def propose(self, snapshot, slots):
            out = super().propose(snapshot, slots)
            return [out[0], out[0], Proposal("base", BASE, compile_prompt(BASE))]

    engine = BeamSearch.open(SearchStore(tmp_path), ScriptedEvaluator(), Repeats(), new_state)
    engine.run()
    rounds = engine.state.round_history
    assert all(len(r.candidates_evaluated) <= 1 for r in rounds)
    prompts = [c.prompt for c in engine.state.candidates.values()]
    assert len(prompts) == len(set(prompts)) and compile_prompt(BASE) not in prompts
