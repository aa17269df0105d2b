from pathlib import Path

from coalign.audit import (
    audit_jsonl,
    iter_pairs_jsonl,
    load_contract,
    rollout_pairs,
    write_pairs_jsonl,
)
from coalign.rollouts import RolloutSpec, collect_pairs
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.systems import MODEL_SELECTOR_TOY
from tests.test_cli_core import run_cli

CONTRACT = Path(__file__).resolve().parents[1] / "examples" / "audit" / "rollout_contract.json"


def collect_toy(store):
    task, examples = MODEL_SELECTOR_TOY.task(), MODEL_SELECTOR_TOY.examples()
    spec = RolloutSpec(param="option", alternatives=("X", "Y"), choice_key=True)
    return collect_pairs(task, "chooser", examples, task.system.default_config(), Runtime(),
                         spec, store=store)


def test_exported_rollout_pairs_audit_with_ties_kept(tmp_path):
    col = collect_toy(RunStore(tmp_path / "run"))
    scope = load_contract(CONTRACT).scope
    out = tmp_path / "pairs.jsonl"
    assert write_pairs_jsonl(out, rollout_pairs(col.all, scope)) == 6
    report = audit_jsonl(load_contract(CONTRACT), out, reader=iter_pairs_jsonl)
    lines = report.to_lines()
    assert "decisive=5;ties=1;abstentions=0" in lines
    assert any(line.startswith("claim=") for line in lines)
    # the one tie (Q5) stays a tie, never a decisive vote
    exported = [p for _, p in iter_pairs_jsonl(out, scope)]
    votes = [p.rater_labels[0][1] for p in exported]
    assert votes.count("tie") == 1
    assert sum(v in ("left", "right") for v in votes) == 5


def test_cli_export_pairs(tmp_path):
    collect_toy(RunStore(tmp_path / "run"))
    out = tmp_path / "p.jsonl"
    proc = run_cli("export-pairs", str(tmp_path / "run"), "--contract", str(CONTRACT),
                   "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "exported=6" in proc.stdout
    audit = run_cli("audit", str(out), "--contract", str(CONTRACT))
    assert "decisive=5;ties=1;abstentions=0" in audit.stdout
