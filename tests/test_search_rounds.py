"""The round state machine walked with scripted scores: every transition is asserted."""

from __future__ import annotations

import pytest

from coalign.search import Candidate, ChildSlot, SearchState, Targets, advance_round, plan_children


def make_state(**kw) -> SearchState:
    base = dict(
        evaluation_budget=9,
        stagnation_limit=2,
        convergence_limit=3,
        epsilon=0.01,
        targets=Targets(quality_min=0.3, cost_max=0.0),
        max_rounds=20,
    )
    base.update(kw)
    st = SearchState(**base)
    st.algorithm_state.epsilon_min = 0.004
    return st


def play(st: SearchState, scores: list, exit_signal: bool = False):
    """Register one child per slot (scores[i] = (q, c) or None for a failed eval) and advance."""
    slots = plan_children(st)
    assert len(slots) == len(scores)
    for slot, sc in zip(slots, scores, strict=True):
        v = st.new_version()
        c = Candidate(
            prompt_version=v,
            parent_version=slot.parent,
            secondary_parent_version=slot.secondary_parent,
            round_introduced=st.current_round,
        )
        if sc is None:
            c.eval_status = "failed"
        else:
            c.quality_score, c.cost = sc
            c.eval_status = "complete"
        st.candidates[v] = c
        st.pending.append(v)
    return slots, advance_round(st, exit_signal=exit_signal)


def test_limits_invariant_enforced():
    with pytest.raises(ValueError, match="convergence_limit"):
        SearchState(stagnation_limit=3, convergence_limit=3)
    defaults = SearchState()
    assert (
        defaults.algorithm_state.beam_width,
        defaults.evaluation_budget,
        defaults.max_rounds,
        defaults.stagnation_limit,
        defaults.convergence_limit,
        defaults.epsilon,
        defaults.algorithm_state.epsilon_min,
        defaults.algorithm_state.backtrack_threshold,
        defaults.mutation_mode,
    ) == (3, 60, 50, 3, 5, 0.001, 0.0005, 2, "targeted")


def test_walk_rounds_1_2_3_plus():
    st = make_state()
    # round 1: cold start, three seeds off base; the dominated seed v3 is still kept
    slots, r = play(st, [(0.1, 0.2), (0.05, -0.1), (0.0, 0.3)])
    assert [s.parent for s in slots] == ["base"] * 3
    assert [s.cell_rank for s in slots] == [0, 1, 2]
    assert r.elite == ["v1", "v2", "v3"]
    assert (r.stagnation_count, r.relative_improvement, r.progress) == (0, None, True)
    assert not r.converged and st.current_round == 2 and st.mutation_mode == "targeted"

    # round 2: exactly one child per scored elite (most promising first: v2 is closest to the
    # targets), no merges; a failed child is not kept
    slots, r = play(st, [(0.2, 0.2), None, (0.0, 0.5)])
    assert slots == [ChildSlot("v2"), ChildSlot("v1"), ChildSlot("v3")]
    assert r.elite == ["v2", "v4"]  # v4 dominates v1 and v3; v6 dominated
    assert st.candidates["v5"].eval_status == "failed"
    assert r.progress and r.stagnation_count == 0 and not r.converged

    # round 3: v2 is far more promising (gap 0.25 vs 0.3, cheaper): concentrate 3 -> 1,
    # children aimed at three different failure cells
    slots, r = play(st, [(0.0, 0.0), (0.01, 0.3), (0.04, -0.05)])
    assert slots == [ChildSlot("v2", 0), ChildSlot("v2", 1), ChildSlot("v2", 2)]
    assert r.relative_improvement == pytest.approx(0.0) and not r.progress
    assert (r.stagnation_count, r.backtracking, r.mutation_mode) == (1, False, "targeted")
    assert st.total_evaluated() == 9 and not r.converged  # budget spent, stagnation 1 < 3

    # round 4: still stuck -> backtracking (threshold 2) and exploratory (stagnation_limit 2)
    _, r = play(st, [(0.0, 0.01), (0.01, 0.25), (0.03, -0.02)])
    assert (r.stagnation_count, r.backtracking, r.mutation_mode) == (2, True, "exploratory")
    assert not r.converged

    # round 5: backtracking moves last round's parent (v2) to the back and splits 2+1;
    # exploratory mode lets the last child merge two parents. A child meets every target:
    # progress, epsilon tightened once (0.01 -> 0.005), stagnation reset
    slots, r = play(st, [(0.35, -0.05), (0.0, 0.1), (0.02, 0.3)])
    assert slots == [ChildSlot("v4", 0), ChildSlot("v2", 0), ChildSlot("v4", 1, "v2")]
    assert st.candidates["v15"].secondary_parent_version == "v2"
    assert r.progress and r.epsilon_tightened_now and r.epsilon == pytest.approx(0.005)
    assert (r.stagnation_count, r.backtracking, r.mutation_mode) == (0, False, "targeted")
    assert r.target_met and r.single_candidate_meets_all

    # rounds 6-8: no progress; epsilon is never tightened again; converges on stagnation
    for expected in (1, 2, 3):
        _, r = play(st, [(0.0, 0.0)] * 3)  # all (0,0): placeholders, dropped
        assert r.stagnation_count == expected and not r.epsilon_tightened_now
        assert r.epsilon == pytest.approx(0.005)
    assert r.converged and r.convergence_reason == "stagnation"
    assert st.converged and st.convergence_reason == "stagnation" and st.loop_phase == "build"
    assert st.current_round == 8 and len(st.round_history) == 8


def test_progress_below_epsilon_is_stagnation():
    st = make_state(epsilon=0.5)
    play(st, [(0.1, 0.1), (0.2, 0.2), (0.3, 0.3)])
    _, r = play(st, [(0.31, 0.3), (0.0, 0.5), (0.0, 0.5)])  # tiny gain
    assert 0 < r.relative_improvement < 0.5 and not r.progress and r.stagnation_count == 1


def test_reference_point_moving_out_gives_no_spurious_progress():
    st = make_state()
    play(st, [(0.1, 0.1), (0.2, 0.2), (0.3, 0.3)])
    ref1 = st.algorithm_state.reference_point
    # a terrible (dominated) child pushes the reference far out; the front is unchanged
    _, r = play(st, [(-0.9, 2.0), (0.0, 0.5), (0.0, 0.6)])
    assert r.reference_point[0] < ref1[0] and r.reference_point[1] > ref1[1]
    assert r.hypervolume > st.round_history[0].hypervolume  # raw area grew with the reference
    assert r.relative_improvement == pytest.approx(0.0)  # ...but not measured as progress
    assert not r.progress and r.stagnation_count == 1
    # the reference never moves back in
    _, r2 = play(st, [(0.2, 0.15)] + [(0.0, 0.3)] * 2)
    assert r2.reference_point == r.reference_point


def test_previous_hypervolume_zero():
    st = make_state()
    _, r = play(st, [None, None, None])  # every seed failed: empty front, zero area
    assert r.elite == [] and r.hypervolume == 0.0 and not r.progress
    slots, r = play(st, [(0.1, 0.1), (0.0, 0.2), (0.2, 0.3)])
    assert [s.parent for s in slots] == ["base"] * 3  # no elite yet: seed again
    assert r.relative_improvement is None and r.progress and r.stagnation_count == 0


def test_exit_signal_guarded_and_max_rounds():
    st = make_state()
    play(st, [(0.4, -0.1), (0.1, 0.1), (0.2, 0.3)])
    _, r = play(st, [(0.0, 0.5)] * 3, exit_signal=True)
    assert not r.converged  # round 2 always continues
    _, r = play(st, [(0.0, 0.5)] * 3, exit_signal=True)
    assert r.converged and r.convergence_reason == "exit_signal"

    st = make_state(targets=Targets(quality_min=0.9))
    play(st, [(0.4, -0.1), (0.1, 0.1), (0.2, 0.3)])
    play(st, [(0.0, 0.5)] * 3)
    _, r = play(st, [(0.0, 0.5)] * 3, exit_signal=True)
    assert not r.converged  # nobody meets every target: exit refused

    st = make_state(max_rounds=2)
    _, r = play(st, [(0.1, 0.1)] * 3)
    assert not r.converged
    _, r = play(st, [(0.2, 0.1)] * 3)
    assert r.converged and r.convergence_reason == "max_rounds"


def test_round3_split_and_spread():
    st = make_state(targets=Targets())
    play(st, [(0.1, 0.1), (0.11, 0.11), (0.5, 0.9)])
    play(st, [(0.0, 0.5)] * 3)
    # v1, v2 comparable, v3 far behind (cost - quality): split 2 + 1
    assert plan_children(st) == [ChildSlot("v1"), ChildSlot("v2"), ChildSlot("v1", 1)]
    st2 = make_state(targets=Targets())
    play(st2, [(0.1, 0.1), (0.11, 0.11), (0.12, 0.12)])
    play(st2, [(0.0, 0.5)] * 3)
    assert [s.parent for s in plan_children(st2)] == ["v1", "v2", "v3"]  # spread 1+1+1
