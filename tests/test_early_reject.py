from coalign.component import FunctionComponent, LLMComponent
from coalign.data import Example
from coalign.lm import CachedLM
from coalign.optimize import Gate, LoopSettings, Optimizer
from coalign.optimize._loop import REJECTED, REJECTED_EARLY
from coalign.params import Choice
from coalign.rewards import HashingBackbone, LocalRewardModel
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.system import System
from coalign.task import Task
from tests.test_optimize_loop import writer_lm


def test_gate_stops_early_only_on_clear_losses():
    gate = Gate(early_reject=0.9, early_chunk=25)
    assert gate.checkpoints(100) == [25, 50, 75, 100] and gate.checkpoints(24) == [24]
    assert Gate().checkpoints(100) == [100]  # off by default: the reference's full validation

    def prefix(losses, wins=0):
        old = [1.0] * losses + [0.0] * wins + [0.5] * (25 - losses - wins)
        new = [0.0] * losses + [1.0] * wins + [0.5] * (25 - losses - wins)
        return new, old

    assert not gate.clearly_worse(*prefix(0))  # all ties: nothing says it is worse
    assert not gate.clearly_worse(*prefix(1))  # one lost input of 25 is no evidence
    assert gate.clearly_worse(*prefix(3))
    assert not gate.clearly_worse(*prefix(3, wins=3))
    assert not Gate().clearly_worse(*prefix(25))


def costly_level_task():
    # a higher level only costs: every proposal away from level 1 is worse on every input
    writer = LLMComponent("writer", ["q"], "draft", "Be concise.", model="m")
    pick = FunctionComponent("pick", lambda x, c, ctx: {"level": c["level"]}, ["q"], ["level"],
                             params={"level": Choice([1, 2, 3], 1)})
    join = FunctionComponent("join", lambda x, c, ctx: {"score": (x["draft"] == "good") - 0.1 *
                                                        x["level"]}, ["draft", "level"], ["score"])
    return Task(System("toy", [writer, pick, join], ["q"], "score"), lambda p, e: float(p), "s")


def optimizer(tmp_path, iterations):
    train = [Example(f"t{i}", {"q": f"train {i}"}, None) for i in range(6)]
    val = [Example(f"v{i}", {"q": f"val {i}"}, None) for i in range(8)]
    rt = Runtime(lms={"m": CachedLM(writer_lm(), tmp_path / "cache.sqlite")})
    reward = LocalRewardModel(HashingBackbone(64), {"writer": "writes", "pick": "picks"})
    settings = LoopSettings(proposals="local", iterations=iterations, search_size=3,
                            fresh_inputs=2, rollout_n=4, seed=1, components=["pick"],
                            gate=Gate(early_reject=0.9, early_chunk=4))
    return Optimizer(costly_level_task(), train, val, rt, RunStore(tmp_path), reward, settings)


def test_a_clearly_worse_candidate_is_validated_on_a_prefix_only(tmp_path):
    opt = optimizer(tmp_path, iterations=4)
    opt.run()
    steps = [r for _, _, r in opt.store.steps()]
    early = [r for r in steps if r["reason"] == REJECTED_EARLY]
    assert early and not [r for r in steps if r["reason"] == REJECTED]
    for r in early:
        assert r["val_checked"] == 4 and r["val_after"] < r["val_before"]
    # the current config once on all 8 inputs, then each candidate on the first 4 only
    validated = sum(r["val_checked"] for r in steps)
    assert opt.account.executed["validation"]["join"] == 8 + validated
    assert opt.val_score == steps[0]["val_before"]  # nothing accepted
    opt.store.close()

    resumed = optimizer(tmp_path, iterations=4)
    resumed.prepare()
    # early rejections are rejections on resume
    assert {(r.component, r.param) for r in resumed.at.rejected} == {("pick", "level")}
