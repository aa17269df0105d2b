"""The demo's replay part: every method on a committed table, no LLM call, a curve written."""

from pathlib import Path

from rich.console import Console

from coalign.cli._replay_demo import show_replay_comparison
from coalign.tables import find_tables

FIXTURE = Path(__file__).parent / "fixtures" / "tables" / "multihop_qa_8q"


def test_every_method_is_shown_for_a_finished_table_and_its_curve_written(tmp_path):
    console = Console(record=True, width=160)
    written = show_replay_comparison(console, tmp_path / "replay", [FIXTURE], seeds=(0,),
                                     budgets=(60.0,))
    assert written == [tmp_path / "replay" / "anytime-multihop_qa_8q.svg"]
    assert written[0].read_text().startswith("<svg")
    shown = " ".join(console.export_text().split())  # titles wrap
    for method in ("coalign", "random search", "optuna tpe", "reinforce (global reward)",
                   "per-question oracle on test"):
        assert method in shown
    assert "no LLM call" in shown and f"anytime curve: {written[0]}" in shown


def test_without_tables_the_demo_says_where_they_live(tmp_path):
    assert find_tables(tmp_path) == []
    console = Console(record=True, width=160)
    assert show_replay_comparison(console, tmp_path / "replay", []) == []
    assert "no replay tables here" in console.export_text()


def test_the_checkout_s_tables_are_found():
    found = find_tables(Path(__file__).resolve().parents[1])
    assert {p.name for p in found} >= {"code_gen", "multihop_qa"}
