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
    root = Path(__file__).resolve().parents[1]
    found = {p.name for p in find_tables(root)}
    finished = {p.name for p in find_tables(root, complete="greedy")}
    assert finished >= {"code_gen", "multihop_qa"}
    # a table left with 1 of its 30 questions built: found, not finished
    assert "probe-code_gen_models-first" in found - finished


def test_coalign_against_the_best_baseline_is_paired_over_the_seeds_test_questions(tmp_path):
    import numpy as np

    from coalign.compare import METHODS, Lookup, compare, draw_split
    from coalign.tables import Table

    table = Table(FIXTURE)
    lookup = Lookup.of_table(table.rewards(), table.space)
    result = compare(lookup, sizes=(2, 3, 3), seeds=[0, 1], budgets=[9.0], methods=METHODS)
    got = result.paired_by_question(lookup, "random search", "optuna tpe", 9.0)
    diffs = []
    for i, (a, b) in enumerate(zip(result.picks["random search"][9.0],
                                   result.picks["optuna tpe"][9.0], strict=True)):
        test = list(draw_split(lookup.scores.shape[1], (2, 3, 3), result.seeds[i]).test)
        assert lookup.score(a, test) == result.scores["random search"][9.0][i]
        diffs += list(lookup.scores[a, test] - lookup.scores[b, test])
    assert got["questions"] == 6 and got["mean"] == np.mean(diffs)
    assert got["lo"] <= got["mean"] <= got["hi"]
    # the oracle has no config: no per-question pairing
    assert result.paired_by_question(lookup, "random search", "per-question oracle on test",
                                     9.0) is None
    console = Console(record=True, width=200)
    show_replay_comparison(console, tmp_path / "replay", [FIXTURE], seeds=(0, 1),
                           budgets=(60.0,))
    assert "coalign − best baseline [95%]" in console.export_text()


def _outside(lookup, split, budget, seed):
    """A method whose answer is a system outside the lookup's configs (as a trained decider
    is): config 0's test scores, registered with ``Lookup.add``."""
    from coalign.compare import Trajectory

    system = lookup.add({q: lookup.score(0, [q]) for q in split.test})
    return Trajectory("outside", [(1.0, system, 1.0)])


def test_a_system_outside_the_lookup_pairs_by_question_across_processes():
    import numpy as np

    from coalign.compare import METHODS, Lookup, compare, draw_split
    from coalign.tables import Table

    table = Table(FIXTURE)
    lookup = Lookup.of_table(table.rewards(), table.space)
    methods = {"outside": (_outside, True), "random search": METHODS["random search"]}
    result = compare(lookup, sizes=(2, 3, 3), seeds=[0, 1], budgets=[9.0], methods=methods,
                     workers=2)  # the added systems live in the worker processes
    assert all(p >= lookup.n_configs for p in result.picks["outside"][9.0])
    got = result.paired_by_question(lookup, "outside", "random search", 9.0)
    diffs = []
    for i, b in enumerate(result.picks["random search"][9.0]):
        test = list(draw_split(lookup.scores.shape[1], (2, 3, 3), result.seeds[i]).test)
        diffs += list(lookup.scores[0, test] - lookup.scores[b, test])
    assert got is not None and got["questions"] == 6 and got["mean"] == np.mean(diffs)


def test_a_table_that_does_not_replay_is_skipped_and_the_others_shown(tmp_path):
    import gzip
    import hashlib
    import json
    import shutil

    broken = tmp_path / "broken_8q"
    shutil.copytree(FIXTURE, broken)
    for shard in sorted((broken / "shards").iterdir()):
        lines = gzip.decompress(shard.read_bytes()).decode().splitlines()
        header, records = json.loads(lines[0]), lines[1:]
        # the answer writer's stored calls go; the done markers stay, so it claims complete
        kept = [r for r in records if json.loads(r).get("component") != "answer_generator"]
        header["records"] = len(kept)
        raw = "\n".join([json.dumps(header), *kept]).encode() + b"\n"
        shard.unlink()
        name = hashlib.sha256(raw).hexdigest()[:20] + ".jsonl.gz"
        (broken / "shards" / name).write_bytes(gzip.compress(raw))
    console = Console(record=True, width=400)
    written = show_replay_comparison(console, tmp_path / "replay", [broken, FIXTURE],
                                     seeds=(0,), budgets=(60.0,))
    assert written == [tmp_path / "replay" / "anytime-multihop_qa_8q.svg"]
    shown = console.export_text()
    assert f"replay comparison: {broken} skipped: answer_generator on" in shown
    assert "not in replay table" in shown
