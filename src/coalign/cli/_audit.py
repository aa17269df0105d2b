"""``coalign audit``: audit a preference-pairs JSONL file under a declared contract."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from coalign.audit import (
    audit_jsonl,
    iter_hh_pairs,
    iter_pairs_jsonl,
    load_contract,
    write_text_atomic,
)
from coalign.cli._app import app, fail
from coalign.errors import CoalignError


class PairFormat(StrEnum):
    pairs = "pairs"  # the audit record format (see docs/audit.md)
    hh = "hh"  # HH-RLHF prompt/chosen/rejected rows: no raters, positions or log-probs


@app.command("audit")
def audit_command(
    pairs: Annotated[Path, typer.Argument(help="Preference pairs, one JSON object per line.")],
    contract: Annotated[Path, typer.Option("--contract", help="Declared contract JSON.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the report here.")]
    = None,
    fmt: Annotated[PairFormat, typer.Option("--format", help="Row format of PAIRS.")]
    = PairFormat.pairs,
) -> None:
    """Audit preference evidence: support, bias indicators and mean DPO loss.

    Exit status: 0 SUPPORTED or FLAGGED, 1 BLOCKED, 2 unusable input (no report).
    """
    reader = iter_hh_pairs if fmt is PairFormat.hh else iter_pairs_jsonl
    try:
        report = audit_jsonl(load_contract(contract), pairs, reader=reader)
    except CoalignError as exc:
        fail(str(exc))
        return
    for line in report.to_lines():
        typer.echo(line)
    if json_out is not None:
        _write_json_atomic(json_out, report.to_json())
    if report.status == "BLOCKED":
        raise typer.Exit(code=1)


@app.command("export-pairs")
def export_pairs_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory holding collected pairs.")],
    contract: Annotated[Path, typer.Option("--contract", help="Contract whose scope to stamp.")],
    out: Annotated[Path, typer.Option("--out", help="Audit-format JSONL to write.")],
    component: Annotated[str | None, typer.Option(help="Only this component's pairs.")] = None,
) -> None:
    """Export a run's Monte-Carlo preference pairs in the audit format (ties stay ties)."""
    from coalign.audit import rollout_pairs, write_pairs_jsonl
    from coalign.store import RunStore

    try:
        scope = load_contract(contract).scope
        with RunStore(run_dir, readonly=True) as store:
            n = write_pairs_jsonl(out, rollout_pairs(store.pairs(component), scope))
    except CoalignError as exc:
        fail(str(exc))
        return
    typer.echo(f"exported={n} path={out}")


def _write_json_atomic(path: Path, payload: dict) -> None:
    try:
        write_text_atomic(path, [json.dumps(payload, indent=2, ensure_ascii=False), "\n"],
                          "the --json report")
    except CoalignError as exc:
        fail(str(exc))
