"""Builders shared by the audit tests (this module holds no tests itself)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from coalign.audit import PreferenceContract, PreferencePair, iter_pairs_jsonl, load_contract

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "audit"
FIXTURE_PAIRS = EXAMPLES / "fixture_pairs.jsonl"
FIXTURE_CONTRACT = EXAMPLES / "fixture_contract.json"
LOGPS = dict(policy_chosen_logp=-2.0, policy_rejected_logp=-4.0,
             reference_chosen_logp=-3.0, reference_rejected_logp=-3.0)


def fixture_contract(**changes: object) -> PreferenceContract:
    contract = load_contract(FIXTURE_CONTRACT)
    return dataclasses.replace(contract, **changes) if changes else contract


def fixture_pairs(contract: PreferenceContract | None = None) -> list[PreferencePair]:
    scope = (contract or fixture_contract()).scope
    return [pair for _, pair in iter_pairs_jsonl(FIXTURE_PAIRS, scope)]


def variant(pair: PreferencePair, **changes: object) -> PreferencePair:
    """New evidence: the changed record with a freshly computed digest."""
    return dataclasses.replace(pair, digest="", **changes)


def make_pair(contract: PreferenceContract, index: int, side: str = "left",
              labels: tuple = (("r1", "chosen"), ("r2", "chosen")), **changes: object
              ) -> PreferencePair:
    """A valid pair; votes given as 'chosen'/'rejected' are mapped to the shown side."""
    other = "right" if side == "left" else "left"
    votes = [(rater, {"chosen": side, "rejected": other}.get(vote, vote)) for rater, vote in labels]
    fields = dict(scope=contract.scope, pair_id=f"p{index}", prompt_id=f"q{index}",
                  prompt=f"prompt {index}", chosen=f"good answer {index}",
                  rejected=f"bad answer {index}", chosen_position=side, rater_labels=votes,
                  **LOGPS)
    fields.update(changes)
    return PreferencePair(**fields)
