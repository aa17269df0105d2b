"""Malformed preference pairs, contracts, run stores and run dirs for ``bad_inputs.py``.

Crafted stores are copies of a run dir made by ``coalign optimize`` (``Ctx.base_run``), edited
with plain SQL the way a damaged or hand-edited file would be.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bad_inputs_cases import FIXTURE_CONTRACT, FIXTURE_PAIRS, Case, Ctx, rows

# -- preference pairs and contracts: coalign audit / export-pairs -----------------------------

def _fixture_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE_PAIRS.read_text().splitlines()]


def _contract(**over: Any) -> str:
    return json.dumps({**json.loads(FIXTURE_CONTRACT.read_text()), **over})


def _audit(name: str, pairs: str | bytes | None = None, contract: str | bytes | None = None,
           extra: tuple[str, ...] = (), good: bool = False) -> Case:
    def make(ctx: Ctx) -> list[str]:
        p = FIXTURE_PAIRS if pairs is None else ctx.write("pairs.jsonl", pairs)
        c = FIXTURE_CONTRACT if contract is None else ctx.write("contract.json", contract)
        return ["audit", str(p), "--contract", str(c), *extra]
    return Case(name, "pairs", make, good=good, ok_codes=(0, 1))


def _pair(**over: Any) -> str:
    return rows({**_fixture_rows()[0], **over})


def _scope(**over: Any) -> dict[str, Any]:
    return {**_fixture_rows()[0]["scope"], **over}


def _export(name: str, mutate: str | None = None, out: str = "pairs.jsonl",
            good: bool = False) -> Case:
    def make(ctx: Ctx) -> list[str]:
        run = ctx.run
        run.mkdir()
        db = sqlite3.connect(run / "run.sqlite")
        db.executescript(STORE_SCHEMA)
        if mutate:
            db.execute("INSERT INTO pairs VALUES (?, 'gen', 'ex1', 'stage1', ?)",
                       *[_stored_pair(mutate)])
        db.commit()
        db.close()
        return ["export-pairs", str(run), "--contract", str(FIXTURE_CONTRACT), "--out",
                str(ctx.dir / out)]
    return Case(name, "pairs", make, good=good)


STORE_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pairs (digest TEXT PRIMARY KEY, component TEXT NOT NULL, example_id TEXT NOT NULL,
                    tag TEXT NOT NULL, json TEXT NOT NULL);
CREATE TABLE steps (step INTEGER PRIMARY KEY, state TEXT NOT NULL, json TEXT NOT NULL);
PRAGMA user_version=1;
"""


def _stored_pair(kind: str) -> tuple[str, str]:
    """(digest, json) of a stored rollout pair: valid, or broken as ``kind`` says."""
    from coalign.pairs import PreferencePair

    pair = PreferencePair("gen", "ex1", {"q": "x"}, {"a": "1"}, {"a": "2"}, 0.9, 0.1, "a")
    record = pair.to_json()
    if kind == "invalid json":
        return pair.digest, "{not json"
    if kind == "altered":
        record["reward_a"] = 0.2
    if kind == "missing field":
        del record["label"]
    if kind == "list":
        return pair.digest, "[1, 2]"
    return pair.digest, json.dumps(record)


PAIRS = [
    Case("pairs file missing", "pairs", lambda ctx: ["audit", str(ctx.dir / "absent.jsonl"),
                                                     "--contract", str(FIXTURE_CONTRACT)]),
    Case("contract missing", "pairs", lambda ctx: ["audit", str(FIXTURE_PAIRS), "--contract",
                                                   str(ctx.dir / "absent.json")]),
    _audit("contract invalid JSON", contract="{"),
    _audit("contract a list", contract="[]"),
    _audit("contract without scope", contract=json.dumps({"beta": 0.1})),
    _audit("contract unknown key", contract=_contract(temperature=1)),
    _audit("contract beta negative", contract=_contract(beta=-0.1)),
    _audit("contract beta a word", contract=_contract(beta="x")),
    _audit("contract logprobs unknown", contract=_contract(logprobs="maybe")),
    _audit("contract share above 1", contract=_contract(thresholds={"max_same_side_share": 2})),
    _audit("contract min_pairs negative", contract=_contract(thresholds={"min_pairs": -1})),
    _audit("contract invalid UTF-8", contract=b'{"scope": "\xff"}'),
    _audit("pairs invalid JSON", pairs='{"pair_id": \n'),
    _audit("pair missing prompt", pairs=rows({k: v for k, v in _fixture_rows()[0].items()
                                              if k != "prompt"})),
    _audit("pair of another rubric", pairs=_pair(scope=_scope(annotator_policy="v2"))),
    _audit("pair with a stale digest", pairs=_pair(chosen="Marseille.")),
    _audit("pair chosen equals rejected", pairs=_pair(rejected=_fixture_rows()[0]["chosen"],
                                                      digest="")),
    _audit("pair position unknown word", pairs=_pair(chosen_position="middle", digest="")),
    _audit("rater labels an object", pairs=_pair(rater_labels={"rater-a": "left"}, digest="")),
    _audit("rater vote unknown", pairs=_pair(rater_labels=[["rater-a", "maybe"]], digest="")),
    _audit("log-prob NaN", pairs=rows(_fixture_rows()[0])
           .replace('"policy_chosen_logp": -2.0', '"policy_chosen_logp": NaN')),
    _audit("two of four log-probs", pairs=_pair(reference_chosen_logp=None,
                                                reference_rejected_logp=None, digest="")),
    _audit("pairs invalid UTF-8", pairs=b'{"pair_id": "\xff"}\n'),
    Case("pairs file a directory", "pairs", lambda ctx: ["audit", str(ctx.dir), "--contract",
                                                         str(FIXTURE_CONTRACT)]),
    _audit("pairs-format rows read as hh", extra=("--format", "hh")),
    _audit("unknown --format", extra=("--format", "csv")),
    Case("--json into a missing folder", "pairs",
         lambda ctx: ["audit", str(FIXTURE_PAIRS), "--contract", str(FIXTURE_CONTRACT),
                      "--json", str(ctx.dir / "no" / "report.json")]),
    _audit("empty pairs file", pairs=""),
    _audit("the fixture", good=True),
    Case("export: run dir missing", "pairs",
         lambda ctx: ["export-pairs", str(ctx.dir / "absent"), "--contract",
                      str(FIXTURE_CONTRACT), "--out", str(ctx.dir / "p.jsonl")]),
    Case("export: run dir a file", "pairs",
         lambda ctx: ["export-pairs", str(ctx.write("run", "x")), "--contract",
                      str(FIXTURE_CONTRACT), "--out", str(ctx.dir / "p.jsonl")]),
    _export("export: stored pair invalid JSON", "invalid json"),
    _export("export: stored pair altered", "altered"),
    _export("export: stored pair missing a field", "missing field"),
    _export("export: stored pair a list", "list"),
    _export("export: --out into a missing folder", "valid", out="no/pairs.jsonl"),
    _export("export: valid store", "valid", good=True),
]


# -- run dirs: coalign resume / coalign report -----------------------------------------------

STEP = {"component": "answer_generator", "param": "prompt", "value": None,
        "reason": "no change proposed", "reset": [], "variants": [], "val_before": 0.0,
        "val_after": None, "val_checked": 0, "seconds": 0.1, "config": {}, "policies": [],
        "lrf_checkpoint": None, "account": None,
        "ledger": {"runs": {}, "llm_calls": {}, "cache_hits": {}}, "candidates": []}


def _sql(*statements: tuple[str, tuple]) -> Callable[[Ctx], Path]:
    """A copy of the base run dir with ``statements`` applied."""
    def make(ctx: Ctx) -> Path:
        run = ctx.base_run()
        with sqlite3.connect(run / "run.sqlite") as db:
            for sql, args in statements:
                db.execute(sql, args)
        return run
    return make


def step(record: Any, n: int = 0) -> tuple[str, tuple]:
    text = record if isinstance(record, str) else json.dumps(record)
    return "INSERT OR REPLACE INTO steps VALUES (?, 'accepted', ?)", (n, text)


def meta(key: str, value: Any, raw: bool = False) -> tuple[str, tuple]:
    return "INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value if raw else json.dumps(value))


def _step(**over: Any) -> tuple[str, tuple]:
    return step({**STEP, **over})


def _missing(ctx: Ctx) -> Path:
    return ctx.dir / "absent"


def _a_file(ctx: Ctx) -> Path:
    return ctx.write("run", "not a run dir\n")


def _empty_dir(ctx: Ctx) -> Path:
    ctx.run.mkdir()
    return ctx.run


def _db_file(content: bytes | str) -> Callable[[Ctx], Path]:
    """A run dir whose run.sqlite is ``content`` (bytes) or made by SQL ``content``."""
    def make(ctx: Ctx) -> Path:
        ctx.run.mkdir()
        path = ctx.run / "run.sqlite"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            with sqlite3.connect(path) as db:
                db.executescript(content)
        return ctx.run
    return make


def _read_only(ctx: Ctx) -> Path:
    run = ctx.base_run()
    for path in [run, *run.iterdir()]:
        os.chmod(path, 0o555 if path.is_dir() else 0o444)
    return run


OTHER_SCHEMA = "CREATE TABLE notes (id INTEGER, text TEXT);"
FUTURE_SCHEMA = STORE_SCHEMA.replace("user_version=1", "user_version=7")
RunDir = tuple[str, Callable[[Ctx], Path], bool, bool]  # name, make, good for resume, report
# The report renders what it can read of a ledger row (rows of older runs lack fields) and
# lists the rest as missing; it never opens checkpoints. Resume rebuilds from the rows, so it
# must refuse what it cannot use, and rewrites the meta that stage 1 records.
DAMAGE: list[RunDir] = [
    ("missing run dir", _missing, False, False),
    ("run dir a file", _a_file, False, False),
    ("empty run dir", _empty_dir, False, False),
    ("run.sqlite of random bytes", _db_file(b"\x00garbage" * 100), False, False),
    ("run.sqlite of another schema", _db_file(OTHER_SCHEMA), False, False),
    ("run.sqlite of a future schema", _db_file(FUTURE_SCHEMA), False, False),
    ("store with no run config and missing tables", _db_file(STORE_SCHEMA), False, False),
    ("ledger row not JSON", _sql(step("{broken")), False, False),
    ("ledger row a list", _sql(step([1, 2])), False, False),
    ("ledger row without config",
     _sql(step({k: v for k, v in STEP.items() if k != "config"})), False, True),
    ("ledger config not a mapping", _sql(_step(config="x")), False, True),
    ("ledger config of unknown component", _sql(_step(config={"nosuch": {"k": 3}})), False,
     True),
    ("ledger policies malformed", _sql(_step(policies=[["a"]])), False, True),
    ("ledger val_before a string", _sql(_step(val_before="high")), False, True),
    ("ledger checkpoint outside the run dir", _sql(_step(lrf_checkpoint="../../etc/passwd")),
     False, True),
    ("stage-1 checkpoint outside the run dir",
     _sql(meta("stage1_checkpoint", "/etc"), meta("stage1_done", True)), False, True),
    ("stage-1 account malformed", _sql(meta("stage1_account", "x"), meta("stage1_done", True)),
     False, True),
    ("meta values of wrong types", _sql(meta("system", 5), meta("result", "x"),
                                         meta("lrf_alignment", [1])), True, True),
    ("trace row not JSON", _sql(("INSERT INTO traces VALUES ('val', 'e1', 'd', 0.5, '{x')", ())),
     True, False),
    ("trace row without steps",
     _sql(("INSERT INTO traces VALUES ('val', 'e1', 'd', 0.5, '{\"example_id\": \"e1\"}')", ())),
     True, False),
    ("valid ledger row", _sql(_step()), True, True),
    ("run dir as optimize left it", lambda ctx: ctx.base_run(), True, True),
]
RESUME_ONLY: list[RunDir] = [
    ("run config a string", _sql(meta("run_config", "hello")), False, False),
    ("run config not JSON", _sql(meta("run_config", "{x", raw=True)), False, False),
    ("run config with an unknown key",
     _sql(("UPDATE meta SET value = json_set(value, '$.extra', 1) WHERE key = 'run_config'", ())),
     False, False),
    ("run config altered (digest differs)",
     _sql(("UPDATE meta SET value = json_set(value, '$.seed', 9) WHERE key = 'run_config'", ())),
     False, False),
]
REPORT_ONLY: list[RunDir] = [
    ("read-only run dir", _read_only, True, True),
]


def _run_dir_case(command: str, run_dir: RunDir) -> Case:
    name, make_dir, resume_good, report_good = run_dir

    def make(ctx: Ctx) -> list[str]:
        return [command, str(make_dir(ctx))]
    return Case(f"{command}: {name}", "run-dir", make,
                good=resume_good if command == "resume" else report_good)


RUN_DIRS = ([_run_dir_case("resume", d) for d in DAMAGE + RESUME_ONLY]
            + [_run_dir_case("report", d) for d in DAMAGE + REPORT_ONLY]
            + [Case("report: --out into a missing folder", "run-dir",
                    lambda ctx: ["report", str(ctx.base_run()), "--out",
                                 str(ctx.dir / "no" / "r.html")])])
