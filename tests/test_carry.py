"""Carried training (``coalign.optimize._carry``): the last component's weights trained on from
step to step, and kept across a kill."""

from __future__ import annotations

import random

import pytest
import torch

from coalign.costs import CostAccount
from coalign.errors import StoreError
from coalign.optimize import ReinforceWeightsOptimizer
from coalign.optimize._base import LocalView, Scored, value_key
from coalign.optimize._carry import carried_after, carried_of, latest, letting_go, trained
from coalign.params import WeightsValue
from coalign.runtime import Runtime
from tests.test_exact_reward import _rerank_last

SLOT = ("reranker", "scorer")


def test_what_a_step_carries_and_what_clears_it():
    assert trained([Scored("a", 0.1), Scored("b", 0.2)], "a") == "b"
    assert trained([Scored("a", 0.1)], "a") is None  # nothing else was proposed
    carried = carried_after({}, SLOT, accepted=False, carry="w1")
    assert carried == {SLOT: "w1"}
    assert carried_after(carried, SLOT, accepted=False, carry="w2") == {SLOT: "w2"}
    assert carried_after(carried, ("x", "y"), accepted=False, carry=None) == carried
    assert carried_after(carried, ("x", "y"), accepted=True, carry=None) == {}  # config moved


def test_a_carried_run_proposes_its_latest_weights_unless_worse_or_closed():
    tie = [Scored("now", 0.5), Scored("new", 0.5)]
    assert latest(tie, [True, True], "now") == "new"  # four inputs rarely tell them apart
    assert latest(tie, [True, False], "now") == "now"  # the gate closed them
    assert latest([Scored("now", 0.5), Scored("new", 0.25)], [True, True], "now") == "now"
    assert latest([Scored("now", 0.5)], [True], "now") == "now"


def test_a_carried_slot_lets_go_after_two_steps_in_a_row_not_taken():
    assert not letting_go(0, 0, n_train=32, search_size=4)
    assert not letting_go(0, 4, n_train=32, search_size=4)  # one window: trained on
    assert not letting_go(1, 0, n_train=32, search_size=4)  # one rejection: trained on
    assert letting_go(0, 8, n_train=32, search_size=4)
    assert letting_go(1, 4, n_train=32, search_size=4)
    assert letting_go(2, 0, n_train=32, search_size=4)
    assert letting_go(0, 6, n_train=6, search_size=4)  # two windows cover the split
    assert letting_go(0, 4, n_train=4, search_size=4)  # every window is the whole split


def _view(carried, continued=True):
    from coalign.data import Example
    from coalign.optimize._exact import ExactReward
    from coalign.system import System
    from coalign.task import Task
    from tests.test_exact_reward import _Fixed
    from tests.test_reranker import rerank_inputs, reranker

    comp = reranker(hidden=0, dim=16)
    system = System("rr", [comp], ["question", "candidates"], "passages")
    task = Task(system, lambda p, e: float(e.target in p[0]), "first")
    sample = [(Example(f"t{i}", {"question": x["question"], "candidates": x["candidates"]},
                       x["answer"]), {"question": x["question"], "candidates": x["candidates"]})
              for i, x in enumerate(rerank_inputs(4, seed=1))]
    return LocalView(task, "reranker", "scorer", system.default_config(),
                     [x for _, x in sample], ExactReward(task, "reranker", sample, _Fixed()),
                     Runtime(), random.Random(0), CostAccount(["reranker"]),
                     continued=continued, carried=carried)


def test_a_continued_step_trains_on_from_the_carried_weights():
    start = _view(None).current
    carried = WeightsValue({k: v + 1.0 for k, v in start.items()})
    # no epoch in the chunk: what comes out is where training stood
    idle = ReinforceWeightsOptimizer(chunk=(0, 2), seed=0)
    assert value_key(idle.propose(_view(carried))[-1].value) == value_key(carried)
    assert value_key(idle.propose(_view(None))[-1].value) == value_key(start)
    # a continued step runs the short chunk, a fresh one the full epochs
    opt = ReinforceWeightsOptimizer(epochs=7, samples=2, chunk=(3, 2), seed=0)
    opt.propose(_view(None))
    assert len(opt.curve) == 3
    opt.propose(_view(None, continued=False))
    assert len(opt.curve) == 7


def _decisions(opt):
    return [(r["step_state"], r["val_after"], r.get("carry")) for _, _, r in opt.store.steps()]


def test_carried_weights_survive_a_kill(tmp_path):
    straight = _rerank_last(tmp_path / "straight", "exact")
    straight.s.iterations = 9
    straight.run()
    rows = [r for _, _, r in straight.store.steps()]
    assert all("carry" not in r for r in rows if r["step_state"] == "accepted")
    k = next(i for i, r in enumerate(rows) if "carry" in r)  # the first step not taken
    assert k < len(rows) - 2
    # killed right after it: the resumed run trains on from its weights
    killed = _rerank_last(tmp_path / "killed", "exact")
    killed.s.iterations = k + 1
    killed.run()
    carried = killed.at.carried[SLOT]
    killed.store.close()
    again = _rerank_last(tmp_path / "killed", "exact")
    again.s.iterations = 9
    again.prepare()
    assert value_key(again.at.carried[SLOT]) == value_key(carried)
    assert all(torch.equal(again.at.carried[SLOT][n], carried[n]) for n in carried)
    again.run()
    assert _decisions(again) == _decisions(straight)  # the carried weights' JSON included


def test_a_ledger_row_whose_carried_weights_do_not_load_is_refused(tmp_path):
    opt = _rerank_last(tmp_path, "exact")
    opt.s.iterations = 1
    opt.run()
    t, _, row = opt.store.steps()[0]
    # a step not taken, as the loop writes a carry only there
    broken = [(t, "rejected", {**row, "step_state": "rejected",
                               "carry": {"safetensors_b64": "AAAA"}})]
    with pytest.raises(StoreError, match="ledger step 0: its carried weights do not load"):
        carried_of(opt.system, broken)
