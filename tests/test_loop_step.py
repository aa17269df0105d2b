"""The loop's iteration as one function over values (issue 22, item 2): no per-step state on the
loop, a step-state enum in the ledger, typed rejection keys, the selector as its own type."""

import dataclasses

import pytest

from coalign.errors import StoreError
from coalign.optimize import StepState
from coalign.optimize._choice import SELECTOR
from coalign.optimize._outcome import LEDGER_FORMAT, REASONS, rejections, step_state, tried
from coalign.optimize._step import Position, StepEnv, step
from tests.selector_toy import selector_loop
from tests.test_optimize_loop import NeverAccept, make_optimizer, writer_lm


def test_a_step_reads_values_and_leaves_the_loop_as_it_was(tmp_path):
    opt = make_optimizer(tmp_path, writer_lm(), iterations=4)
    opt.s.gate = NeverAccept()
    opt.prepare()
    fields = set(vars(opt))
    assert not fields & {"_scored", "_variants", "_ctx", "_inputs", "_rejected"}
    at = opt.at
    snapshot = (at.config.digest, dict(at.policies), dict(at.val_traces), at.rejected)
    outcomes = [step(t, opt._env(), at) for t in range(4)]
    # nothing was committed: the loop, its ledger and the position are untouched
    assert (at.config.digest, dict(at.policies), dict(at.val_traces), at.rejected) == snapshot
    assert opt.store.steps() == [] and opt.at is at
    assert set(vars(opt)) == fields
    # ``run`` commits each step's outcome before the next (a rejection is remembered), so its
    # first step is the first uncommitted one
    opt.run()
    _, _, first = opt.store.steps()[0]
    assert (outcomes[0].component, outcomes[0].param, outcomes[0].state.value,
            outcomes[0].row()["value"]) == (first["component"], first["param"],
                                            first["step_state"], first["value"])
    assert set(vars(opt)) == fields  # run state only: no attribute appears mid-run
    assert opt.at.rejected and opt.at is not at  # each committed step replaced the one value
    assert all(cls.__dataclass_params__.frozen for cls in (StepEnv, Position))
    with pytest.raises(dataclasses.FrozenInstanceError):
        at.config = opt.config  # type: ignore[misc]


def test_the_ledger_stores_the_step_state_and_resume_reads_it(tmp_path):
    opt = make_optimizer(tmp_path, writer_lm(), iterations=6)
    opt.s.gate = NeverAccept()
    opt.run()
    rows = opt.store.steps()
    for t, state, rec in rows:
        s = StepState(rec["step_state"])
        assert rec["format"] == LEDGER_FORMAT and rec["reason"] == REASONS[s]
        assert step_state(t, state, rec) is s
        # a row without the state (ledger format 1) is read from its reason string
        old = {k: v for k, v in rec.items() if k not in ("step_state", "format", "selector")}
        assert step_state(t, state, old) is s
    remembered = rejections(rows)
    assert remembered == {tried(r["component"], r["param"],
                                opt.system.component(r["component"]).params[r["param"]]
                                .from_json(r["value"]))
                          for _, _, r in rows if StepState(r["step_state"]).rejected}
    # the reason is for people: rewording it does not change what resume rebuilds
    reworded = [(t, st, {**r, "reason": "x"}) for t, st, r in rows]
    assert rejections(reworded) == remembered


def test_a_ledger_from_a_newer_format_is_refused_in_one_line(tmp_path):
    opt = make_optimizer(tmp_path / "a", writer_lm(), iterations=1)
    opt.run()
    (t, state, rec), = opt.store.steps()
    opt.store.close()
    newer = make_optimizer(tmp_path / "b", writer_lm(), iterations=2)
    newer.store.put_step(t, state, {**rec, "format": LEDGER_FORMAT + 1})
    with pytest.raises(StoreError, match=rf"^run store .*: ledger step 0 is in ledger format "
                                         rf"{LEDGER_FORMAT + 1}; this coalign reads formats "
                                         rf"1-{LEDGER_FORMAT} \(upgrade coalign or use a new "
                                         r"--run-dir\)$"):
        newer.prepare()


def test_the_selector_is_its_own_type_not_a_value_of_the_param():
    assert tried("c", "p", SELECTOR) != tried("c", "p", "lrf-selector")
    assert tried("c", "p", SELECTOR).value is None
    assert SELECTOR != "lrf-selector" and SELECTOR.to_json() == "lrf-selector"


def test_an_accepted_selector_is_recorded_as_before_and_flagged(tmp_path):
    opt = selector_loop(tmp_path)
    (rec,) = opt.run()
    (_, _, row), = opt.store.steps()
    assert rec.value == row["value"] == "lrf-selector" and row["selector"] is True
    assert row["step_state"] == "accepted"


def test_a_finite_slot_is_not_drawn_again_once_it_proposed_no_change_on_every_train_input(
        tmp_path):
    """Rule 19: under one config, a finite slot's "no change" on windows covering the train
    split settles it; with every drawable slot settled the run stops (a fixed point), and
    resume rebuilds the same memory from the ledger."""
    from coalign.optimize._outcome import unchanged_inputs, window_indices
    from tests.test_early_reject import optimizer

    opt = optimizer(tmp_path, iterations=40)
    opt.run()
    rows = opt.store.steps()
    n = len(opt.train)
    finite = {(c, p) for c, p in opt.targets
              if opt.s.kinds[opt.system.component(c).params[p].kind].finite_values(
                  opt.system.component(c).params[p])}
    covered: dict = {}
    for t, _, rec in rows:
        state, key = StepState(rec["step_state"]), (rec["component"], rec["param"])
        if state is StepState.ACCEPTED:
            covered = {}
        elif state is StepState.NO_CHANGE:
            assert not (key in finite and len(covered.get(key, ())) >= n), \
                f"step {t} drew {key}, settled already"
            covered[key] = covered.get(key, frozenset()) | window_indices(t, n, opt.s.search_size)
    last = StepState(rows[-1][2]["step_state"])
    assert last is StepState.SETTLED and len(rows) < 40  # stopped at the fixed point
    assert {k for k, v in covered.items() if len(v) >= n} >= {
        k for k in finite if opt.reward.can_score(k[0])}
    assert unchanged_inputs(rows, n, opt.s.search_size) == opt.at.unchanged == covered
    opt.store.close()
    again = optimizer(tmp_path, iterations=40)
    again.prepare()
    assert again.at.unchanged == opt.at.unchanged
