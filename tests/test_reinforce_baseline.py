import numpy as np
import pytest

from coalign.component import FunctionComponent
from coalign.data import Example
from coalign.optimize import RunningBaseline, reinforce_search
from coalign.params import Choice, Text
from coalign.runtime import Runtime
from coalign.system import System
from coalign.task import Task
from tests.test_reranker import rerank_inputs
from tests.test_weights_optimizer import rerank_task


def choice_task():
    """Level 2 is best; the writer's draft is good only under an instruction asking concision."""
    pick = FunctionComponent("pick", lambda x, c, ctx: {"level": c["level"]}, ["q"], ["level"],
                             params={"level": Choice([0, 1, 2, 3])})
    writer = FunctionComponent(
        "writer", lambda x, c, ctx: {"good": "concise" in c["instr"].instruction.lower()},
        ["q"], ["good"], params={"instr": Text("Write the draft.")})
    join = FunctionComponent(
        "join", lambda x, c, ctx: {"score": (1.0 if x["level"] == 2 else 0.3) + 0.5 * x["good"]
                                   + 0.01 * (x["q"] % 3)},
        ["q", "level", "good"], ["score"])
    return Task(System("c", [pick, writer, join], ["q"], "score"), lambda p, e: float(p), "s")


TRAIN = [Example(f"t{i}", {"q": i}, None) for i in range(12)]
VAL = [Example(f"v{i}", {"q": i}, None) for i in range(4)]


def test_running_baseline_signs_then_scales():
    base = RunningBaseline(decay=0.5)
    assert base.advantages([1.0]).tolist() == [0.0]  # first call only sets the mean
    assert base.advantages([2.0, 0.0]).tolist() == [1.0, -1.0]  # no spread seen yet: signs
    adv = base.advantages([10.0])
    assert adv[0] == pytest.approx(3.0)  # clipped


@pytest.mark.parametrize("seed", range(4))
def test_reinforce_search_finds_the_known_best_within_budget(seed):
    res = reinforce_search(choice_task(), TRAIN, VAL, Runtime(), budget_runs=300, seed=seed,
                           batch_size=2)
    assert res.equiv_runs <= 300
    assert res.best["pick"]["level"] == 2
    assert "concise" in res.best["writer"]["instr"].instruction.lower()
    assert res.best_score == pytest.approx(1.5 + 0.01 * np.mean([i % 3 for i in range(4)]))
    assert res.probs["pick.level"][2] > 0.9 and max(res.probs["writer.instr"]) > 0.9
    assert np.mean(res.curve[-10:]) > np.mean(res.curve[:10]) + 0.3


def test_reinforce_search_is_seeded():
    res = reinforce_search(choice_task(), TRAIN, VAL, Runtime(), budget_runs=60, seed=0,
                           batch_size=2)
    again = reinforce_search(choice_task(), TRAIN, VAL, Runtime(), budget_runs=60, seed=0,
                             batch_size=2)
    assert again.curve == res.curve and again.tried == res.tried
    other = reinforce_search(choice_task(), TRAIN, VAL, Runtime(), budget_runs=60, seed=1,
                             batch_size=2)
    assert other.curve != res.curve


@pytest.mark.parametrize("budget", [0, 3, 4, 7, 9, 10.5, 41])
def test_reinforce_search_never_exceeds_the_budget(budget):
    res = reinforce_search(choice_task(), TRAIN, VAL, Runtime(), budget_runs=budget,
                           batch_size=3)
    assert res.equiv_runs <= budget
    if budget >= len(VAL):
        assert res.tried and res.best_score == max(s for _, s in res.tried)
    else:
        assert not res.tried and res.best_score == float("-inf")


def test_reinforce_search_trains_weights_with_the_global_reward():
    def examples(prefix, n, seed):
        return [Example(f"{prefix}{i}", {"question": x["question"],
                                         "candidates": x["candidates"]}, x["answer"])
                for i, x in enumerate(rerank_inputs(n, seed=seed))]

    task, val = rerank_task(), examples("v", 6, 3)
    res = reinforce_search(task, examples("t", 12, 1), val, Runtime(), budget_runs=200, seed=0,
                           batch_size=4, components=["reranker"])
    assert res.equiv_runs <= 200
    assert res.best.digest != task.system.default_config().digest
    # the default keeps the incoming order, where the answer passage is never first: 0 on val
    assert res.best_score >= 0.8
    assert np.mean(res.curve[-5:]) > np.mean(res.curve[:5]) + 0.4


def test_reinforce_search_learns_a_per_instance_choice_as_a_global_option():
    pick = FunctionComponent("pick", lambda x, c, ctx: {"u": c["m"]}, ["q"], ["u"],
                             params={"m": Choice([0, 3], 0, scope="per_instance")})
    task = Task(System("p", [pick], ["q"], "u"), lambda p, e: float(p), "u")
    res = reinforce_search(task, TRAIN, VAL, Runtime(), budget_runs=120, seed=0, batch_size=2)
    assert res.best["pick"]["m"] == 3 and res.probs["pick.m"][1] > 0.5


def test_reinforce_reports_each_update_and_the_final_scoring():
    seen = []
    res = reinforce_search(choice_task(), TRAIN, VAL, Runtime(), budget_runs=60, seed=0,
                           batch_size=2, on_trial=lambda *a: seen.append(a))
    updates = [a for a in seen if a[0].startswith("update ")]
    assert [s for _, s, _ in updates] == res.curve
    assert [(d, s) for d, s, _ in seen[len(updates):]] == res.tried
    equiv = [e for _, _, e in seen]
    assert equiv == sorted(equiv)  # equivalent runs only grow
