"""The report reads what the real optimization loop writes (toy system, fake LM: a format check)."""

from __future__ import annotations

import pytest

from coalign.report import build_report_data, write_report
from tests.test_optimize_loop import make_optimizer, writer_lm


@pytest.mark.slow
def test_report_of_a_real_loop_run(tmp_path) -> None:
    opt = make_optimizer(tmp_path, writer_lm(), iterations=6)
    opt.store.set_meta("system", opt.system.name)  # as the job does
    history = opt.run()
    data = build_report_data(opt.store)
    assert [(s.step, s.accepted) for s in data.steps] == [(r.step, r.accepted) for r in history]
    # the report's three decisions are the loop's own states
    assert [s.decision for s in data.steps] == [
        "accepted" if r.accepted else "rejected" if r.state.rejected else "skipped"
        for r in history]
    assert data.curve[-1].score == pytest.approx(opt.val_score)
    accepted = [r.step for r in history if r.accepted]
    assert accepted, "the toy run should accept at least one step"
    # Trace keys recomputed from the stored config match the loop's own keys.
    labels = [g.label for g in data.examples]
    assert labels == ["initial configuration"] + [f"after step {s} (accepted)" for s in accepted]
    assert [c.phase for c in data.costs][:1] == ["lrf_train"]
    assert data.total_runs == pytest.approx(opt.ledger().total_runs)
    final = {(p.component, p.param): p for p in data.final}
    assert final["writer", "prompt"].text == opt.config["writer"]["prompt"].instruction
    page = write_report(tmp_path).read_text(encoding="utf-8")
    assert page.count('<tr class="accepted"') == len(accepted)
