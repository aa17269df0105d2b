"""Export coalign's Monte-Carlo rollout pairs as audit records, ties kept as ties.

A rollout pair has no human raters: its only judgment is the Monte-Carlo estimator that compared
the two outputs' mean downstream rewards. It is recorded as one rater, ``mc-rollout-estimator``,
voting for the side the higher-reward output was shown on, or ``tie`` for a tie. The estimator
never sees a layout, so the shown side alternates by pair digest (a fixed side would raise a
spurious one-sided-layout flag). No log-probabilities are supplied.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from coalign.audit._contract import AuditScope
from coalign.audit._pair import PreferencePair as AuditPair
from coalign.pairs import PreferencePair, canonical_json

ESTIMATOR = "mc-rollout-estimator"


def rollout_pair(pair: PreferencePair, scope: AuditScope) -> AuditPair:
    """One rollout pair as an audit record (the prompt is the component and its inputs)."""
    prompt = canonical_json({"component": pair.component, "inputs": dict(pair.inputs)})
    if pair.is_tie:
        first, second = canonical_json(dict(pair.output_a)), canonical_json(dict(pair.output_b))
    else:
        first, second = canonical_json(dict(pair.chosen)), canonical_json(dict(pair.rejected))
    side = "left" if int(pair.digest[-1], 16) % 2 == 0 else "right"
    vote = "tie" if pair.is_tie else side
    return AuditPair(scope=scope, pair_id=f"rollout-{pair.digest[:24]}",
                     prompt_id=f"{pair.component}:{pair.example_id}", prompt=prompt,
                     chosen=first, rejected=second, chosen_position=side,
                     rater_labels=((ESTIMATOR, vote),))


def rollout_pairs(pairs: Iterable[PreferencePair], scope: AuditScope) -> Iterator[AuditPair]:
    for pair in pairs:
        yield rollout_pair(pair, scope)
