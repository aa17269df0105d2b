"""Progress of an optimization: the loop reports each input of its long phases, and the CLI
draws a bar per phase with the budget spent and the best validation score (issue 24)."""

from __future__ import annotations

import io

from rich.console import Console

from coalign.cli._progress import RunProgress
from tests.test_optimize_loop import make_optimizer, writer_lm


def test_stage1_and_validation_report_every_input_up_to_their_totals(tmp_path):
    opt = make_optimizer(tmp_path, writer_lm(), iterations=1)
    heard: dict[str, list[tuple[int, int]]] = {}
    opt.prepare(progress=lambda phase, done, total: heard.setdefault(phase, []).append(
        (done, total)))
    rollouts = heard["rollouts (lrf_train)"]
    components = len({c for c, _ in opt.targets})
    assert rollouts[-1] == (len(opt.train) * components, len(opt.train) * components)
    assert [d for d, _ in rollouts] == list(range(1, len(rollouts) + 1))
    assert heard["validating the current config"][-1] == (len(opt.val), len(opt.val))
    opt.store.close()
    resumed = make_optimizer(tmp_path, writer_lm(), iterations=1)
    again: list[str] = []
    resumed.prepare(progress=lambda phase, done, total: again.append(phase))
    assert "rollouts (lrf_train)" not in again  # stage 1 is done: nothing to count


def test_bars_show_phase_counts_budget_and_best_score_on_a_terminal():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with RunProgress(console) as bars:
        bars.phase("rollouts (lrf_train)", 3, 8)
        bars.steps(2, 10, 1234.4, 0.7125)
    text = out.getvalue()
    assert "rollouts (lrf_train)" in text and "3/8" in text
    assert "steps · 1,234 equiv. runs · best val 0.713" in text and "2/10" in text


def test_no_bars_off_a_terminal():
    out = io.StringIO()
    with RunProgress(Console(file=out, force_terminal=False)) as bars:
        bars.phase("rollouts (lrf_train)", 3, 8)
    assert out.getvalue() == ""
