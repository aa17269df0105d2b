"""The portfolio loop's global step and the draw of each step's arm (``_portfolio``)."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Collection, Sequence

import numpy as np

from coalign.optimize._carry import continues, letting_go
from coalign.optimize._outcome import Outcome
from coalign.optimize._portfolio import (
    GLOBAL,
    Axes,
    axes_of,
    exhausted,
    exhausted_outcome,
    global_proposal,
    pick_arm,
    propose,
)
from coalign.optimize._position import Position
from coalign.optimize._step import StepEnv, draw, judged
from coalign.optimize._weights_arm import arm_slots, improving, weights_step


def global_step(t: int, env: StepEnv, at: Position) -> Outcome:
    """Step ``t`` as a global step: the score model's Thompson draw over the finite slots
    (the other params as now), validated from the first component it changes and gated like
    a local proposal."""
    axes = axes_of(env.task.system, env.targets, env.settings.kinds, at.policies)
    rng = np.random.default_rng([env.settings.seed, t])
    config = propose(axes, at.validated, at.config, rng, env.settings.gate.cost_cap)
    if config is None:
        return exhausted_outcome(at.score)
    component, proposal = global_proposal(env.task.system.order, axes, at.config, config,
                                          at.policies)
    out = judged(env, at, component, GLOBAL[1], proposal)
    return dataclasses.replace(out, component=GLOBAL[0])


def local_targets(env: StepEnv, at: Position,
                  open_: tuple[Axes, bool] | None = None) -> list[tuple[str, str]]:
    """The local arm's slots: while the global arm has configs left to propose, the slots
    only the local arm can move (weights, open-ended text), if there are any; else every
    target. Each arm works where it is strong: on next_item, whose gain is the decider's
    weights, local steps spent on the prompts the global arm was already searching delayed
    the weights by some 500 runs. ``open_``: ``global_open``'s answer, if already known."""
    axes, left = open_ or global_open(env, at)
    covered = {(c, p) for c, p, _ in axes.slots}
    only = [t for t in env.targets if t not in covered]
    return only if only and left else list(env.targets)


def global_open(env: StepEnv, at: Position) -> tuple[Axes, bool]:
    """The finite slots, and whether the global arm has a config of them left to propose."""
    axes = axes_of(env.task.system, env.targets, env.settings.kinds, at.policies)
    return axes, bool(axes.slots) and not exhausted(axes, at.validated, at.config,
                                                     env.settings.gate.cost_cap)


def exact_first(env: StepEnv, at: Position, local: Sequence[tuple[str, str]],
                axes: Axes) -> list[tuple[str, str]]:
    """The local slots that only the local arm can move and the task metric scores
    (``_exact``), while they improve: since the last accepted step, none of them rejected
    or found nothing to change (a slot whose training is carried on, ``_carry``: fewer
    than ``PATIENCE`` of its steps not taken). Their step is judged on the metric of train
    draws before its validation, so it goes first, as the weights arm's search does while it
    improves; on next_item global steps on the prompts, drawn first by chance, held back the
    decider's first step (RESULTS.md, "The last component's exact reward")."""
    covered = {(c, p) for c, p, _ in axes.slots}
    rejected = Counter((r.component, r.param) for r in at.rejected)

    def shut(c: str, p: str) -> bool:
        kind = env.settings.kinds[env.task.system.component(c).params[p].kind]
        if not continues(env.exact, c, kind.network):
            return (c, p) in rejected or (c, p) in at.unchanged
        return letting_go(rejected[(c, p)], len(at.unchanged.get((c, p), ())),
                          len(env.train), env.settings.search_size)

    return [(c, p) for c, p in local
            if c in env.exact and (c, p) not in covered and not shut(c, p)]


def arm(t: int, env: StepEnv, at: Position, paid: Collection[str]
        ) -> tuple[str, list[tuple[str, str]]]:
    """Step ``t``'s arm: global while configs of the finite slots are left to validate, local
    while a component has a local reward to draw (or is still to be paid for), weights while
    a small ``Weights`` param is a target (``_weights_arm``; not the last component's, which
    the local arm trains on the task metric of every draw, ``_exact``, first while it
    improves: ``exact_first``); among them, a Thompson draw on
    their records. The weights arm goes first while its search is in its first generation or
    improving (``_weights_arm.improving``): its steps are the cheapest (one component's
    executions), and the other arms' first steps (a full validation, stage-1 rollouts) would
    interrupt a search that is making progress.
    Where every param has finite values, the global arm goes first until the score model has
    more configs than effects (before, it cannot tell a config's own deviation from noise,
    and a local arm's first step would pay its stage-1 rollouts at the smallest budgets,
    where a global search is what pays); where some param only the local arm can move
    (weights, open-ended text), the arms draw from the start. Returns the arm and the local
    arm's slots (``local_targets``); ``paid``: the components whose stage-1 rollouts are
    paid."""
    axes, left = global_open(env, at)
    local = local_targets(env, at, (axes, left))
    available = ["global"] if left else []
    unpaid = any(c not in paid and c not in env.exact for c, _ in local)
    local_env = dataclasses.replace(env, targets=local)
    if unpaid or not isinstance(draw(local_env, at, random.Random(0)), Outcome):
        available.append("local")
    weights = arm_slots(env, at)
    if weights:
        available.append("weights")
        if improving(env.task.system, weights, at.validated, at.config):
            return "weights", local
    first = exact_first(env, at, local, axes)
    if first:
        return "local", first
    if not available:
        return "local", local  # its step says why nothing is left (settled, no reward)
    every = len(axes.slots) == len(env.targets)  # no param only the local arm can move
    if every and left and len(at.validated) <= 1 + sum(n - 1 for n in axes.sizes):
        return "global", local
    return pick_arm(at.arms, available, np.random.default_rng([env.settings.seed, t, 1]),
                    prior_runs=float(len(env.val))), local


# the arms that are one function of (step, env, position); the local arm is the loop's ``step``
ARM_STEPS = {"global": global_step, "weights": weights_step}
