"""The round state machine: who gets children this round, and how a scored round advances.

Round 1 (cold start): ``beam_width`` seeds off ``base``; every scored seed is kept, no Pareto
filtering, stagnation forced to 0. Round 2: exactly one child per scored elite, no merges, the
search always continues. Round >= 3: ``beam_width`` children spread over 1-3 elites
(concentrate / split / spread), two-parent merges allowed, children of one parent aimed at
different failure cells; Pareto selection, crowding pruning and hypervolume progress apply.
"""

from __future__ import annotations

from dataclasses import dataclass

from coalign.search._progress import (
    front_quality_spread,
    measure_progress,
    reference_point,
)
from coalign.search._selection import update_elite_set
from coalign.search._state import (
    ROOT_VERSION,
    Candidate,
    RoundSummary,
    SearchState,
    Targets,
    version_number,
)

_COMPARABLE = 0.05  # two elites whose promise differs by less than this look equally promising


@dataclass(frozen=True)
class ChildSlot:
    """One child to create: its parent(s) and which of the parent's failure cells it targets
    (0 = the worst cell, 1 = the next, ...), so siblings never chase the same cell."""

    parent: str
    cell_rank: int = 0
    secondary_parent: str | None = None


def target_gap(c: Candidate, targets: Targets) -> float:
    """How far ``c`` is from meeting the declared targets (0 when met or none declared)."""
    gap = 0.0
    if targets.quality_min is not None:
        gap += max(0.0, targets.quality_min - c.quality_score)
    if targets.cost_max is not None:
        gap += max(0.0, c.cost - targets.cost_max)
    return gap


def rank_elites(state: SearchState) -> list[Candidate]:
    """Most promising first (see :func:`_promise`), ties to the older version. After a stall
    (backtracking) the parents expanded last round move to the back, so the search turns."""
    elites = [c for c in state.elite_candidates() if c.scored]
    elites.sort(
        key=lambda c: (
            _promise(c, state.targets),
            target_gap(c, state.targets),
            version_number(c.prompt_version),
        )
    )
    backtracking = bool(state.round_history) and state.round_history[-1].backtracking
    if backtracking:
        last = set(state.algorithm_state.last_parents)
        elites.sort(key=lambda c: c.prompt_version in last)  # stable: keeps the order within
    return elites


def _promise(c: Candidate, targets: Targets) -> float:
    """Lower is more promising: the gap to the targets plus how far the candidate sits from the
    ideal corner on the two axes (cost - quality)."""
    return target_gap(c, targets) - c.quality_score + c.cost


def plan_children(state: SearchState) -> list[ChildSlot]:
    """The slots of the current round (see the module docstring)."""
    bw = state.algorithm_state.beam_width
    elites = rank_elites(state)
    if state.current_round == 1 or not elites:
        return [ChildSlot(ROOT_VERSION, cell_rank=i) for i in range(bw)]
    if state.current_round == 2:
        return [ChildSlot(c.prompt_version) for c in elites]

    scores = [_promise(c, state.targets) for c in elites[:3]]
    backtracking = state.round_history[-1].backtracking
    if len(elites) == 1 or (not backtracking and scores[1] - scores[0] > _COMPARABLE):
        parents = elites[:1]  # concentrate
    elif len(elites) == 2 or (not backtracking and scores[2] - scores[1] > _COMPARABLE):
        parents = elites[:2]  # split
    else:
        parents = elites[:3]  # spread
    # hand out children round-robin: 3 -> 3, 2 parents -> 2+1, 3 parents -> 1+1+1
    counts = [0] * len(parents)
    slots: list[ChildSlot] = []
    for k in range(bw):
        i = k % len(parents)
        slots.append(ChildSlot(parents[i].prompt_version, cell_rank=counts[i]))
        counts[i] += 1
    if state.mutation_mode == "exploratory" and len(elites) > 1:
        # a stalled search may merge: the last child also inherits from another elite
        last = slots[-1]
        other = next(c.prompt_version for c in elites if c.prompt_version != last.parent)
        slots[-1] = ChildSlot(last.parent, last.cell_rank, secondary_parent=other)
    return slots


def advance_round(state: SearchState, exit_signal: bool = False) -> RoundSummary:
    """Fold the scored pending candidates into ``state`` and decide whether the search ends.

    Mutates ``state`` (elite, progress bookkeeping, round counter, pending list) and returns the
    round's summary, which is also appended to ``state.round_history``.
    """
    rnd = state.current_round
    algo = state.algorithm_state
    pending = state.pending_candidates()
    unfinished = [c.prompt_version for c in pending if c.eval_status not in ("complete", "failed")]
    if unfinished:
        raise RuntimeError(f"advance_round: candidates {unfinished} are not evaluated yet")
    scored = [c for c in pending if c.scored]
    previous = state.elite_candidates()
    cold = rnd == 1
    elite = update_elite_set(previous, scored, 2 * algo.beam_width + 1, cold_start=cold)

    ref = reference_point([*previous, *scored], previous=algo.reference_point)
    prog = measure_progress(elite, [] if cold else previous, ref, state.epsilon)
    if cold:
        stagnation = 0
    else:
        stagnation = 0 if prog.progress else state.stagnation_count + 1

    target_met = state.targets.declared() and _each_target_met(elite, state.targets)
    tightened_now = False
    if target_met and not algo.epsilon_tightened:
        state.epsilon = max(state.epsilon / 2, algo.epsilon_min)
        algo.epsilon_tightened = True
        stagnation = 0
        tightened_now = True

    backtracking = stagnation >= algo.backtrack_threshold
    if stagnation >= state.stagnation_limit:
        state.mutation_mode = "exploratory"
    elif stagnation == 0:
        state.mutation_mode = "targeted"

    single_meets_all = any(state.targets.met_by(c) for c in elite)
    total = state.total_evaluated() + len(pending)
    budget_reached = total >= state.evaluation_budget
    reason: str | None = None
    if rnd >= state.max_rounds:
        reason = "max_rounds"
    elif budget_reached and stagnation >= state.convergence_limit:
        reason = "stagnation"
    elif exit_signal and rnd >= 3 and single_meets_all:
        reason = "exit_signal"  # rounds 1-2 always continue; exit needs one all-round winner

    summary = RoundSummary(
        round=rnd,
        candidates_evaluated=[c.prompt_version for c in pending],
        elite=[c.prompt_version for c in elite],
        hypervolume=prog.hypervolume,
        hypervolume_prev_same_ref=prog.hypervolume_prev_same_ref,
        relative_improvement=prog.relative_improvement,
        progress=prog.progress,
        reference_point=ref,
        stagnation_count=stagnation,
        epsilon=state.epsilon,
        epsilon_tightened_now=tightened_now,
        backtracking=backtracking,
        mutation_mode=state.mutation_mode,
        target_met=target_met,
        single_candidate_meets_all=single_meets_all,
        front_quality_spread=front_quality_spread(elite),
        converged=reason is not None,
        convergence_reason=reason,
    )
    algo.hypervolume_prev = algo.hypervolume
    algo.hypervolume = prog.hypervolume
    algo.reference_point = ref
    algo.last_parents = sorted({c.parent_version for c in pending if c.parent_version})
    state.elite = summary.elite
    state.stagnation_count = stagnation
    state.pending = []
    state.round_history.append(summary)
    if reason is not None:
        state.converged = True
        state.convergence_reason = reason
        state.loop_phase = "build"
    else:
        state.current_round = rnd + 1
        state.loop_phase = "review"
    return summary


def _each_target_met(elite: list[Candidate], targets: Targets) -> bool:
    """Every declared target is met by at least one elite member (not necessarily the same)."""
    q_ok = targets.quality_min is None or any(c.quality_score >= targets.quality_min for c in elite)
    c_ok = targets.cost_max is None or any(c.cost <= targets.cost_max for c in elite)
    return bool(elite) and q_ok and c_ok
