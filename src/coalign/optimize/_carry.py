"""Carried training: the last component's ``Weights`` trained on from step to step.

Where the task metric scores a component (``_exact``), a policy gradient's draws are rewarded
by the truth on train examples, so training them need not restart whenever the gate says no.
The loop then takes the component's steps as chunks of one training run, as a plain REINFORCE
does: each step trains a few epochs on from where the slot's last step left its weights, and
the gate judges the result. Weights the gate turned down, or that changed no greedy output on
the search sample, are carried into the slot's next step; an accepted step, or any change of
the config, starts the run again from the config's weights. On next_item the whole restart
cost showed at the smallest budget: a short step that moved the weights too little to change a
pick was refused, and the next restarted from the same weights (RESULTS.md).

The carried weights are written to the step's ledger row, so a resumed run trains on from the
same ones.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from coalign.errors import ConfigError, StoreError
from coalign.optimize._base import Scored, value_key
from coalign.optimize._outcome import Outcome, StepState, step_state

Slot = tuple[str, str]
PATIENCE = 2  # steps not taken (since an accepted one) before a carried slot stops going first


def continues(exact: Iterable[str], component: str, network: bool) -> bool:
    """``component``'s param is trained as a policy (``ParamKind.network``) on the task
    metric: its steps carry their training on."""
    return network and component in exact


def trained(candidates: Iterable[Scored], current: Any) -> Any:
    """What the step's training ended at: its candidate other than the current value (None:
    it proposed nothing else)."""
    now = value_key(current)
    return next((s.value for s in candidates if value_key(s.value) != now), None)


def latest(candidates: Sequence[Scored], open_: Sequence[bool], current: Any) -> Any:
    """A carried run's proposal: the weights its training reached (``trained``), unless the
    gate closed them or they score below the current value on the search sample. A tie is
    proposed too: four search inputs rarely tell a near-converged run's weights apart, and
    REINFORCE validates every step's weights."""
    reward = {value_key(s.value): s.reward for s in candidates}
    new = trained([s for s, o in zip(candidates, open_, strict=True) if o], current)
    now = reward.get(value_key(current))
    if new is None or now is None or reward[value_key(new)] < now:
        return current
    return new


def carried_after(carried: Mapping[Slot, Any], slot: Slot, accepted: bool, carry: Any
                  ) -> dict[Slot, Any]:
    """The carried weights once a step of ``slot`` is committed: none after an accepted step
    (the config changed), the step's ``carry`` for its slot otherwise."""
    if accepted:
        return {}
    return {**carried, slot: carry} if carry is not None else dict(carried)


def carried_of(system: Any, steps: Iterable[tuple[int, str, Mapping[str, Any]]]
               ) -> dict[Slot, Any]:
    """The carried weights a ledger's rows leave (``carried_after`` over them); only the
    carries that survive to the end are decoded."""
    raw: dict[Slot, Any] = {}
    for t, state, row in steps:
        raw = carried_after(raw, (row["component"], row["param"]),
                            step_state(t, state, row) is StepState.ACCEPTED,
                            (t, row["carry"]) if "carry" in row else None)
    return {slot: _load(system, slot, t, carry) for slot, (t, carry) in raw.items()}


def _load(system: Any, slot: Slot, t: int, carry: Any) -> Any:
    try:
        return system.component(slot[0]).params[slot[1]].from_json(carry)
    except ConfigError as exc:
        raise StoreError(f"ledger step {t}: its carried weights do not load: {exc}") from None


def letting_go(rejected: int, unchanged: int, n_train: int, search_size: int) -> bool:
    """A carried slot stops going first once ``PATIENCE`` of its steps since the last
    accepted step were not taken: ``rejected`` values the gate turned down and the search
    windows that found no change (``unchanged``: the train inputs they held; all of them
    counts as enough). Each such step trained on, so one says little (a first chunk that ties
    on four inputs and on validation is common), but a run that stays put is spent."""
    window = max(1, min(search_size, n_train))
    windows = PATIENCE if unchanged >= n_train else math.ceil(unchanged / window)
    return rejected + windows >= PATIENCE


def with_carry(out: Outcome, spec: Any, current: Any) -> Outcome:
    """``out`` with the weights its step trained to, to carry on from unless accepted."""
    value = None if out.accepted else trained(out.candidates, current)
    return dataclasses.replace(out, carry=None if value is None else (value, spec.to_json(value)))
