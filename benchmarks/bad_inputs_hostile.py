"""The inputs of the second probe (issue 42) for ``bad_inputs.py``: endpoint specs and tracking
URIs holding a key, rows of the wrong type, deeply nested JSON, read-only and full disks, and
model text with control characters in the report.

A case whose input holds ``KEY`` also fails (``other``) when the key shows in its output.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from benchmarks.bad_inputs_cases import (
    FIXTURE_CONTRACT,
    FIXTURE_PAIRS,
    ROW,
    Case,
    Ctx,
    _dataset,
    _eval,
    _flags,
    _optimize,
    _over,
    _row,
    _sysconfig,
    _valid_config,
    config,
    rows,
)
from benchmarks.bad_inputs_stores import _audit, _export, _run_dir_case, _sql, _step, step

KEY = "SECRETKEY42"
DEEP = "[" * 100_000 + "]" * 100_000


def _no_key(ctx: Ctx, stdout: str, stderr: str) -> bool:
    return KEY not in stdout + stderr


def _keyed(case: Case) -> Case:
    return dataclasses.replace(case, check=_no_key)


def _on(disk: str, case: Case) -> Case:
    return dataclasses.replace(case, disk=disk)


# -- endpoint specs and tracking URIs holding a key --------------------------------------------

MISTYPED_SPECS = {
    "no URL scheme: the key in the model id": f"openai:user:{KEY}@host/v1",
    "no model id before the URL": f"openai:@http://user:{KEY}@127.0.0.1:9/v1",
    "the URL where the model id goes": f"openai:http://user:{KEY}@127.0.0.1:9/v1",
    "a mistyped URL scheme": f"openai:m@htp://user:{KEY}@127.0.0.1:9/v1",
    "a key in the URL's query": f"openai:m@http://127.0.0.1:9/v1?api_key={KEY}",
    "a mistyped backend": f"opnai:m@http://user:{KEY}@127.0.0.1:9/v1",
}

SPECS = [
    *[_keyed(_eval(f"--model {name}", "--model", spec)) for name, spec in MISTYPED_SPECS.items()],
    *[_keyed(_optimize(f"model: {name}", _over(model=spec))) for name, spec in
      list(MISTYPED_SPECS.items())[:3]],
    _keyed(_flags("optimize --mlflow with a key, server down", "optimize", _valid_config,
                  "--mlflow", f"http://user:{KEY}@127.0.0.1:9/",
                  "--run-dir", lambda ctx: str(ctx.run))),
]


# -- dataset rows of the wrong type --------------------------------------------------------------

def _inputs(**over: Any) -> dict[str, Any]:
    return _row(inputs={**ROW["inputs"], **over})


def _mapped(*objs: dict[str, Any]) -> Callable[[Ctx], Any]:
    fields = {"question": "q", "paragraphs": "ctx", "target": "a"}
    return lambda ctx: config(ctx, data={"path": str(ctx.write("rows.jsonl", rows(*objs))),
                                         "fields": fields})


PARAGRAPHS = [{"title": "T", "text": "Some text."}]
MAPPED = {"q": "q?", "ctx": PARAGRAPHS, "a": "x"}  # the split takes three rows
ROWS = [
    _dataset("integer target", rows(_row(target=5))),
    _dataset("integer question", rows(_inputs(question=5))),
    _dataset("paragraphs as plain strings", rows(_inputs(paragraphs=["Some text."]))),
    _dataset("a paragraph without text", rows(_inputs(paragraphs=[{"title": "T"}]))),
    _dataset("valid rows with paragraphs", rows(_inputs(paragraphs=PARAGRAPHS)), good=True),
    _optimize("mapped rows: integer question", _mapped({**MAPPED, "q": 5}, MAPPED, MAPPED)),
    _optimize("mapped rows: paragraphs as plain strings",
              _mapped({**MAPPED, "ctx": ["Some text."]}, MAPPED, MAPPED)),
    _optimize("mapped rows: valid", _mapped(MAPPED, MAPPED, MAPPED), good=True),
]

# demos are rendered in the component's input order: any key order is one valid config
DEMOS = json.dumps({"answer_generator": {"prompt": {"instruction": "Answer.", "demos": [
    {"answer": "Paris", "info": "Paris is the capital of France.", "question": "Capital?"}]}}})
CONFIGS = [_sysconfig("valid config with demos, keys in any order", DEMOS, good=True)]


# -- deeply nested JSON, read-only and full disks -----------------------------------------------

def _audit_json_on_full_disk(ctx: Ctx) -> list[str]:
    return ["audit", str(FIXTURE_PAIRS), "--contract", str(FIXTURE_CONTRACT), "--json",
            str(ctx.disk / "report.json")]


def _export_run(name: str, out: Callable[[Ctx], Any], disk: str | None = None,
                good: bool = False, **over: Any) -> Case:
    def make(ctx: Ctx) -> list[str]:
        run = _sql(_step(**over))(ctx)
        return ["export", str(run), "--out", str(out(ctx))]
    return Case(name, "run-dir", make, good=good, disk=disk)


WRITES = [
    _audit("pairs nested too deeply", pairs='{"pair_id": "x", "prompt": ' + DEEP + "}\n"),
    _audit("contract nested too deeply", contract='{"scope": ' + DEEP + "}"),
    *[_run_dir_case(command, ("ledger row nested too deeply",
                              _sql(step('{"config": ' + DEEP + "}")), False, False))
      for command in ("resume", "report")],
    Case("--json on a full disk", "pairs", _audit_json_on_full_disk, disk="full"),
    _on("full", _export("export: --out on a full disk", "valid", out="disk/pairs.jsonl")),
    _export_run("export: --out on a read-only folder", lambda ctx: ctx.disk / "system.json",
                disk="read-only", val_after=0.5),
    _export_run("export: --out on a full disk", lambda ctx: ctx.disk / "system.json",
                disk="full", val_after=0.5),
    _export_run("export: --out an existing folder", lambda ctx: ctx.dir, val_after=0.5),
    _export_run("export: valid ledger row", lambda ctx: ctx.dir / "system.json", good=True,
                val_after=0.5),
    _export_run("export: accepted row without val_after", lambda ctx: ctx.dir / "system.json",
                good=True),
    _on("nearly-full", _flags("optimize --run-dir on a nearly full disk (first store write)",
                              "optimize", _valid_config, "--run-dir",
                              lambda ctx: str(ctx.disk / "run"))),
]


# -- model text with control characters in the report ------------------------------------------

HOSTILE = "\x1b[2J\x1b[31mcleared\x00 bell\x07 \u202eevil"


def _report_escaped(ctx: Ctx, stdout: str, stderr: str) -> bool:
    page = (ctx.run / "report.html").read_bytes()
    return not any(c.encode() in page for c in "\x1b\x00\x07\u202e")


def _report_of_hostile_text(ctx: Ctx) -> list[str]:
    run = _sql(_step(reason=HOSTILE, value={"instruction": HOSTILE, "demos": []}))(ctx)
    return ["report", str(run)]


REPORTS = [Case("report: model text with control characters", "run-dir",
                _report_of_hostile_text, good=True, check=_report_escaped)]

HOSTILE_CASES = [*SPECS, *ROWS, *CONFIGS, *WRITES, *REPORTS]
