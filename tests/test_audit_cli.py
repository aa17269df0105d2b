"""``coalign audit`` end to end through the Typer app."""

from __future__ import annotations

import json

import typer
import typer.core
from typer.testing import CliRunner

import coalign.cli._audit  # noqa: F401  (registers the command)
from coalign.cli._app import app
from tests.test_audit_support import EXAMPLES, FIXTURE_CONTRACT, FIXTURE_PAIRS


def run(*args: str):
    # With one registered command Typer exposes it as the root; with several, by name.
    group = isinstance(typer.main.get_command(app), typer.core.TyperGroup)
    return CliRunner().invoke(app, (["audit"] if group else []) + list(map(str, args)))


def test_cli_prints_the_fixture_report_and_writes_json(tmp_path) -> None:
    out = tmp_path / "report.json"
    result = run(FIXTURE_PAIRS, "--contract", FIXTURE_CONTRACT, "--json", out)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for expected in ("status=SUPPORTED", "decisive=4;ties=2;abstentions=2",
                     "mean_dpo_loss=0.598139",
                     "claim=PREFERENCE_EVIDENCE_NOT_REWARD_OR_CAPABILITY"):
        assert expected in lines
    assert all("=" in line for line in lines)
    written = json.loads(out.read_text())
    assert written["status"] == "SUPPORTED" and written["decisive"] == 4
    assert round(written["mean_dpo_loss"], 6) == 0.598139


def test_cli_bad_input_is_one_line_exit_2(tmp_path) -> None:
    bad = tmp_path / "pairs.jsonl"
    bad.write_text('{"pair_id": "x"}\n')
    result = run(bad, "--contract", FIXTURE_CONTRACT)
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and result.output.count("\n") == 1
    missing = run(FIXTURE_PAIRS, "--contract", tmp_path / "nope.json")
    assert missing.exit_code == 2 and "nope.json: cannot read contract" in missing.output


def test_cli_blocked_report_exits_1_on_real_hh(shared_data) -> None:
    pairs = shared_data / "hh_rlhf" / "harmless_base_test_sample499_pairs.jsonl"
    result = run(pairs, "--contract", EXAMPLES / "hh_rlhf_contract.json", "--format", "hh")
    assert result.exit_code == 1, result.output
    assert "status=BLOCKED" in result.output
    assert "decisive=0;ties=0;abstentions=0" in result.output
    assert "mean_dpo_loss=not_supplied" in result.output
