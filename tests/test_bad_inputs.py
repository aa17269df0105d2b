"""Bad input ends in one ``error: ...`` line (exit 2) or a correct result: a subset of the probe
``benchmarks/bad_inputs.py`` through the real command line, and one unit test per fix."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from coalign.audit import write_pairs_jsonl
from coalign.cli import main
from coalign.errors import ConfigError, DataError, StoreError
from coalign.job import load_run_config
from coalign.lm import CachedLM, chat
from coalign.optimize._ledger import checked_meta, checked_steps
from coalign.report import build_report_data
from coalign.runner import load_jsonl_examples
from coalign.store import RunStore
from coalign.systems import SYSTEMS
from coalign.trace import Trace
from tests.fakes import FakeLM

ROOT = Path(__file__).resolve().parents[1]

# every family, and each input a fix of issue 26 was made for
PROBE_SUBSET = [
    ("run-config", "empty yaml file"), ("run-config", "duplicate yaml key"),
    ("run-config", "invalid utf-8"), ("run-config", "budget.iterations true"),
    ("run-config", "valid yaml config"),
    ("dataset", "repeated ids"), ("dataset", "missing target"), ("dataset", "null target"),
    ("dataset", "valid rows"),
    ("system-config", "a list"), ("system-config", "component params a number"),
    ("system-config", "a directory"),
    ("pairs", "unknown --format"), ("pairs", "export: --out into a missing folder"),
    ("pairs", "the fixture"),
    ("run-dir", "resume: ledger policies malformed"), ("run-dir", "resume: valid ledger row"),
    ("run-dir", "report: ledger row not JSON"), ("run-dir", "report: trace row not JSON"),
    ("run-dir", "report: store with no run config and missing tables"),
    ("run-dir", "report: ledger config not a mapping"),
    ("flags", "--limit 0"), ("flags", "unknown option"),
    ("flags", "table build: --minutes negative"), ("flags", "table status of a real table"),
]


def load_probe():
    from benchmarks import bad_inputs

    return bad_inputs


@pytest.mark.slow
def test_probe_subset_gives_one_line_errors_or_correct_results(tmp_path):
    probe = load_probe()
    by_key = {(c.family, c.name): c for c in probe.CASES}
    assert {c.family for c in probe.CASES} == {f for f, _ in PROBE_SUBSET}
    results = [probe.run_case(by_key[key], tmp_path, i) for i, key in enumerate(PROBE_SUBSET)]
    wrong = [(r["name"], r["outcome"], r["first_stderr_line"]) for r in results
             if r["outcome"] not in ("one-line", "correct")]
    assert not wrong


def test_probe_classifies_each_outcome():
    probe = load_probe()
    bad = probe.Case("x", "f", lambda ctx: [])
    good = probe.Case("y", "f", lambda ctx: [], good=True, ok_codes=(0, 1))
    reached = f"error: model 'm': /t/{probe.SENTINEL} is not a GGUF file (bad magic)\n"
    assert probe.classify(bad, 2, "", "error: field 'x' missing\n") == "one-line"
    assert probe.classify(bad, 1, "", "Traceback (most recent call last):\n") == "traceback"
    assert probe.classify(bad, 0, "", "") == "silent"
    assert probe.classify(bad, 2, "", reached) == "silent"
    assert probe.classify(bad, 2, "", "Usage: x\nError: y\n") == "other"
    assert probe.classify(good, 1, "BLOCKED", "") == "correct"
    assert probe.classify(good, 2, "", "error: refused\n") == "other"


# -- the command line: click's usage errors ----------------------------------------------------

def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["coalign", *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    return exit_.value.code, capsys.readouterr().err


@pytest.mark.parametrize("args, match", [
    (("evaluate", "multihop_qa", "--limit", "abc"), "Invalid value for '--limit'"),
    (("evaluate", "multihop_qa", "--limit", "0"), "greater than or equal to 1"),
    (("evaluate", "multihop_qa", "--workers", "0"), "'--workers'"),
    (("evaluate", "multihop_qa", "--bogus"), "No such option: --bogus"),
    (("evaluat",), "No such command 'evaluat'"),
    (("table", "build", "t", "--minutes", "-1"), "--minutes must be a finite number > 0"),
    (("table", "build", "t", "--seal-every", "0"), "'--seal-every'"),
])
def test_usage_errors_are_one_line(monkeypatch, capsys, args, match):
    code, err = run_main(monkeypatch, capsys, *args)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and match in err


def test_help_and_exit_codes_are_kept(monkeypatch, capsys, tmp_path):
    assert run_main(monkeypatch, capsys, "--help")[0] == 0
    monkeypatch.setattr(sys, "argv", ["coalign"])
    with pytest.raises(SystemExit) as bare:
        main()
    assert bare.value.code == 2 and "Usage" in capsys.readouterr().out  # the help, as before
    contract = json.loads((ROOT / "examples" / "audit" / "fixture_contract.json").read_text())
    contract["thresholds"] = {"min_pairs": 100}
    (tmp_path / "c.json").write_text(json.dumps(contract))
    code, _ = run_main(monkeypatch, capsys, "audit", str(ROOT / "examples" / "audit" /
                                                         "fixture_pairs.jsonl"),
                       "--contract", str(tmp_path / "c.json"))
    assert code == 1  # BLOCKED: typer.Exit(1) still reaches the shell


# -- run configs --------------------------------------------------------------------------------

@pytest.mark.parametrize("name, content, match", [
    ("empty.yaml", "", "expected a mapping .* got an empty file"),
    ("comments.yaml", "# only a comment\n", "got an empty file"),
    ("list.json", "[]", "got a list"),
    ("twice.yaml", "seed: 1\nseed: 2\n", "key 'seed' is given twice"),
    ("nested.yaml", "split: {train: 1, train: 2}\n", "key 'train' is given twice"),
    ("twice.json", '{"seed": 1, "seed": 2}', "key 'seed' is given twice"),
    ("latin1.yaml", b"system: multihop\xff_qa\n", "not UTF-8 text"),
    ("yes.yaml", "budget: {iterations: yes}\n", "'budget.iterations'"),
    ("half.yaml", "split: {train: 1.5}\n", "'split.train'"),
    ("workers.yaml", "workers: 0\n", "'workers'"),
    ("none.yaml", "components: []\n", "'components'"),
])
def test_bad_run_config_files_are_refused(tmp_path, name, content, match):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ConfigError, match=match):
        load_run_config(path)


def test_run_config_edge_cases_that_are_fine(tmp_path):
    with pytest.raises(ConfigError, match="cannot read it"):
        load_run_config(tmp_path)  # a directory
    anchors = tmp_path / "anchors.yaml"  # overriding a key merged in by `<<:` is no repeat
    anchors.write_text("start:\n  answer_generator: &p {prompt: a}\n  question_rewriter:\n"
                       "    <<: *p\n    prompt: b\n")
    assert load_run_config(anchors).start["question_rewriter"] == {"prompt": "b"}


# -- datasets and system configs ---------------------------------------------------------------

ROW = {"id": "a", "inputs": {"question": "q", "paragraphs": []}, "target": "x"}


@pytest.mark.parametrize("rows, match", [
    ([ROW, {**ROW, "id": "b"}, ROW], "line 3: id 'a' repeats the id of rows.jsonl line 1"),
    ([{**ROW, "id": 1}, {**ROW, "id": "1"}], "line 2: id '1' repeats"),
    ([{k: v for k, v in ROW.items() if k != "target"}], "line 1: field 'target' missing"),
    ([{**ROW, "target": None}], "field 'target' is null"),
])
def test_jsonl_dataset_refuses_repeated_ids_and_missing_targets(tmp_path, rows, match):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match=match):
        load_jsonl_examples(path)


def test_jsonl_dataset_keeps_falsy_targets(tmp_path):
    # rows of the user's own inputs: a multi-hop QA row (ROW) needs its target as text
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({**ROW, "inputs": {"x": 1}, "id": i, "target": t}) + "\n"
                            for i, t in enumerate(["", 0, False, []])))
    assert [e.target for e in load_jsonl_examples(path)] == ["", 0, False, []]


@pytest.mark.parametrize("content, match", [
    ("[]", "a config is a JSON object"),
    ('{"retriever": 5}', "retriever: params must be a JSON object"),
    (b'{"answer_generator": {"prompt": "\xff"}}', "not UTF-8 text"),
    (None, "cannot read it"),
])
def test_system_config_files_are_refused_by_name(tmp_path, content, match):
    from coalign.cli._core import read_system_config

    path = tmp_path / "config.json"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ConfigError, match=f"config file {path}: .*{match}"):
        read_system_config(SYSTEMS["multihop_qa"]("qwen2.5-0.5b"), path)


# -- run stores: write errors, damaged records, resume's ledger check, the report -----------------

def big_trace(i: int) -> Trace:
    trace = Trace(f"e{i}", "d", {"q": "x" * 200_000})
    trace.reward = 0.5
    return trace


@pytest.mark.parametrize("limit, match", [
    ("PRAGMA max_page_count = {pages}", "database or disk is full"),  # the disk fills up
    ("PRAGMA query_only = 1", "readonly"),  # read-only media
])
def test_a_failed_write_is_one_store_error_and_keeps_nothing(tmp_path, limit, match):
    store = RunStore(tmp_path / "run")
    store.set_meta("before", 1)
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(limit.format(pages=pages))
    with pytest.raises(StoreError, match=f"run store .*run.sqlite: cannot write .*{match}"):
        with store.transaction():
            store.set_meta("half", 1)
            store.put_trace("eval", big_trace(0))
    assert store.get_meta("half") is None and store.traces("eval") == []  # rolled back
    store._db.execute("PRAGMA max_page_count = 1073741823")
    store._db.execute("PRAGMA query_only = 0")
    store.put_trace("eval", big_trace(1))  # the store goes on once there is room
    assert [t.example_id for t in store.traces("eval")] == ["e1"]
    store.close()


def test_a_full_response_cache_is_one_store_error(tmp_path):
    lm = CachedLM(FakeLM(lambda r: "answer"), tmp_path / "c.sqlite")
    lm._db.execute("PRAGMA query_only = 1")
    with pytest.raises(StoreError, match="response cache .*c.sqlite: cannot store an answer"):
        lm.generate(chat("hello"))
    lm._db.execute("PRAGMA query_only = 0")
    assert len(lm) == 0


def damaged(tmp_path: Path, *statements: str) -> RunStore:
    RunStore(tmp_path / "run").close()
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:
        for sql in statements:
            db.execute(sql)
    return RunStore(tmp_path / "run", readonly=True)


@pytest.mark.parametrize("statement, read, match", [
    ("INSERT INTO steps VALUES (0, 'accepted', '{broken')", "steps", "ledger step 0 is not"),
    ("INSERT INTO steps VALUES (0, 'accepted', '[1]')", "steps", "ledger step 0 is not"),
    ("INSERT INTO traces VALUES ('val', 'e', 'd', 0, '{x')", "traces", "a stored trace is not"),
    ("INSERT INTO traces VALUES ('val', 'e', 'd', 0, '{}')", "traces", "a stored trace lacks"),
    ("DROP TABLE costs", "costs", "is damaged .*no such table"),
])
def test_damaged_store_records_are_refused_by_name(tmp_path, statement, read, match):
    with damaged(tmp_path, statement) as store, pytest.raises(StoreError, match=match):
        getattr(store, read)(*(("val",) if read == "traces" else ()))


STEP = {"component": "c", "param": "p", "value": None, "reason": "r", "val_before": 0.1,
        "val_after": None, "seconds": 1.0, "config": {}, "policies": [["c", "p"]],
        "lrf_checkpoint": None, "account": None}


@pytest.mark.parametrize("change, field", [
    ({"config": "x"}, "config"), ({"policies": [["a"]]}, "policies"),
    ({"val_before": "high"}, "val_before"), ({"account": "x"}, "account"),
    ({"reason": None}, "reason"),
])
def test_resume_refuses_ledger_rows_it_cannot_rebuild_from(tmp_path, change, field):
    with RunStore(tmp_path / "run") as store:
        store.put_step(0, "accepted", STEP)
        assert checked_steps(store)[0][2] == STEP
        store.put_step(1, "rejected", {**STEP, **change})
        with pytest.raises(StoreError, match=f"ledger step 1 has no valid '{field}'"):
            checked_steps(store)
        store.set_meta("stage1_account", "x")
        with pytest.raises(StoreError, match="'stage1_account' is a str"):
            checked_meta(store, "stage1_account", dict)
        assert checked_meta(store, "absent", dict) is None


def test_report_renders_what_it_can_of_malformed_ledger_rows(tmp_path):
    with RunStore(tmp_path / "run") as store:
        store.set_meta("system", "multihop_qa")
        store.put_step(0, "accepted", {**STEP, "config": {"c": "x"}, "policies": [["a"], 5]})
        store.put_step(1, "accepted", {**STEP, "config": "x", "policies": "y"})
    with RunStore(tmp_path / "run", readonly=True) as store:
        data = build_report_data(store)
    assert len(data.steps) == 2 and data.final == ()
    assert any("final configuration" in m for m in data.missing)


def test_export_into_a_missing_folder_is_refused_by_name(tmp_path):
    with pytest.raises(DataError, match="no/pairs.jsonl: cannot write pairs"):
        write_pairs_jsonl(tmp_path / "no" / "pairs.jsonl", [])
