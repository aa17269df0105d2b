"""A switched choice comes with and without its component's tuned params (optimize/_coupled)."""

import numpy as np

from coalign.component import LLMComponent
from coalign.data import Example
from coalign.lm import CachedLM
from coalign.optimize import LoopSettings, Optimizer
from coalign.optimize._coupled import Variant, best_variant, tuned_siblings, variants
from coalign.optimize._outcome import Tried, tried
from coalign.params import Choice, TextValue
from coalign.rewards import HashingBackbone, LocalRewardModel
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.system import System
from coalign.task import Task
from tests.fakes import FakeLM

TUNED = TextValue("Answer. TUNED for the cheap model.")


def system(scope: str = "per_instance") -> System:
    gen = LLMComponent("gen", ["q"], "answer", "Answer.",
                       model=Choice(["cheap", "strong"], "cheap", scope=scope))
    return System("sel", [gen], ["q"], "answer")


def test_tuned_siblings_are_the_params_off_their_starting_value():
    sysm = system()
    start = sysm.default_config()
    assert tuned_siblings(start, start, "gen", "model") == ()
    tuned = start.with_value("gen", "prompt", TUNED)
    assert tuned_siblings(tuned, start, "gen", "model") == ("prompt",)
    assert tuned_siblings(tuned, start, "gen", "prompt") == ()  # the param itself never counts


def test_variants_put_the_siblings_back_and_keys_tell_them_apart():
    sysm = system()
    start = sysm.default_config()
    proposed = start.with_value("gen", "prompt", TUNED).with_value("gen", "model", "strong")
    plain, fresh = variants(proposed, start, "gen", ("prompt",))
    assert plain == Variant(proposed)
    assert fresh.reset == ("prompt",) and fresh.config["gen"]["model"] == "strong"
    assert fresh.config["gen"]["prompt"] == start["gen"]["prompt"]
    assert variants(proposed, start, "gen", ()) == [Variant(proposed)]
    # the rejection memory tells the variants apart by the params they reset
    assert tried("gen", "model", "strong") == Tried("gen", "model", '"strong"', ())
    assert tried("gen", "model", "strong", ["prompt"]) == Tried("gen", "model", '"strong"',
                                                                ("prompt",))


def test_best_variant_by_local_reward_a_tie_keeps_the_tuned_values():
    sysm = system()
    a, b = Variant(sysm.default_config()), Variant(sysm.default_config(), ("prompt",))
    assert best_variant([a, b], lambda v: 0.7 if v.reset else 0.2)[0] is b
    assert best_variant([a, b], lambda v: 0.5)[0] is a
    picked, scored = best_variant([b], lambda v: 1 / 0)  # one variant: nothing to score
    assert picked is b and scored == []


class Scripted(LocalRewardModel):
    """Ranks the options and the answers by a fixed table: what a well-aligned (or, with
    ``answers`` reversed, a misaligned) local reward would say."""

    answers = {"best": 1.0, "ok": 0.5, "wrong": 0.0}

    def score_batch(self, component, items):
        return np.array([{"cheap": 0.1, "strong": 0.9}[y["@model"]] if "@model" in y
                         else self.answers[y["answer"]] for _, y in items])


def cheap(r) -> str:  # the tuned prompt helps the cheap model
    return "ok" if "TUNED" in r.messages[0].content else "wrong"


def strong(r) -> str:  # ... and hurts the strong one, which is best with the starting prompt
    return "wrong" if "TUNED" in r.messages[0].content else "best"


def run_model_steps(tmp_path, answers: dict[str, float], wanted: int,
                    scope: str = "per_instance", tau: float = 1.0) -> tuple[Optimizer, list]:
    task = Task(system(scope), lambda pred, ex: {"best": 1.0, "ok": 0.5}.get(pred, 0.0), "acc")
    lms = {"cheap": CachedLM(FakeLM(cheap), tmp_path / "c.sqlite"),
           "strong": CachedLM(FakeLM(strong), tmp_path / "s.sqlite")}
    reward = Scripted(HashingBackbone(64), {"gen": "answers"})
    reward.answers = answers
    train = [Example(f"t{i}", {"q": f"train {i}"}, None) for i in range(6)]
    val = [Example(f"v{i}", {"q": f"val {i}"}, None) for i in range(4)]
    opt = Optimizer(task, train, val, Runtime(lms=lms), RunStore(tmp_path / "run"), reward,
                    LoopSettings(proposals="local", iterations=30, search_size=3, fresh_inputs=2,
                                 rollout_n=2, tau=tau))
    opt.config = opt.config.with_value("gen", "prompt", TUNED)  # an earlier accepted prompt
    opt.prepare()
    assert opt.val_score == 0.5
    steps = []
    for t in range(30):
        rec = opt.iteration(t)
        if rec.param == "model":
            steps.append(rec)
        if len(steps) == wanted:
            break
    return opt, steps


def test_switch_is_validated_with_the_prompt_reset_when_the_reward_prefers_it(tmp_path):
    opt, [step] = run_model_steps(tmp_path, Scripted.answers, 1)
    assert step.value == "strong" and step.reset == ("prompt",) and step.accepted
    assert opt.config["gen"]["prompt"] == opt.system.default_config()["gen"]["prompt"]
    assert opt.val_score == 1.0
    rec = next(r for t, _, r in opt.store.steps() if t == step.step)
    assert rec["reset"] == ["prompt"]
    # both variants were scored on the search sample, the reset one higher
    assert [v["reset"] for v in rec["variants"]] == [[], ["prompt"]]
    assert rec["variants"][1]["local_reward"] > rec["variants"][0]["local_reward"]


def test_a_rejected_plain_switch_leaves_the_reset_variant_for_a_later_step(tmp_path):
    misaligned = {"best": 0.0, "ok": 0.5, "wrong": 1.0}  # prefers the plain switch's output
    opt, steps = run_model_steps(tmp_path, misaligned, 2)
    first, second = steps
    assert first.value == "strong" and first.reset == () and not first.accepted
    assert second.value == "strong" and second.reset == ("prompt",) and second.accepted
    assert opt.val_score == 1.0


def test_rejections_of_variants_survive_a_resume(tmp_path):
    misaligned = {"best": 0.0, "ok": 0.5, "wrong": 1.0}
    opt, [first] = run_model_steps(tmp_path, misaligned, 1)
    assert not first.accepted
    again = Optimizer(opt.task, opt.train, opt.val, opt.runtime, opt.store, opt.reward,
                      opt.s)
    again.prepare()
    assert {r for r in again.at.rejected if r.param == "model"} == {tried("gen", "model", "strong")}
    assert again.history_so_far()[-1].reset == ()


def test_a_global_choice_scores_an_option_by_its_better_variant(tmp_path):
    # under the tuned prompt the strong model looks worst ("wrong" vs "ok"); with the starting
    # prompt it is best, so it is drawn (tau small) and validated with the prompt reset
    opt, [step] = run_model_steps(tmp_path, Scripted.answers, 1, scope="global", tau=0.05)
    assert step.value == "strong" and step.reset == ("prompt",) and step.accepted
    rec = next(r for t, _, r in opt.store.steps() if t == step.step)
    assert {c["value"]: c["local_reward"] for c in rec["candidates"]} == {"strong": 1.0,
                                                                           "cheap": 0.5}
    assert opt.val_score == 1.0


def expand_model(tmp_path, table, rejected=frozenset(), tuned=True):
    """The loop's expansion of the global ``model`` choice, with the local reward of each
    (option, reset?) variant read from ``table``; returns it and the variants asked for."""
    from coalign.optimize._base import LocalView
    from coalign.optimize._step import Position, expand

    task = Task(system("global"), lambda pred, ex: 0.0, "acc")
    opt = Optimizer(task, [Example("t", {"q": "t"}, None)], [Example("v", {"q": "v"}, None)],
                    Runtime(), RunStore(tmp_path), LocalRewardModel(HashingBackbone(8), {}),
                    LoopSettings(proposals="local", tau=0.05))
    config = opt.config.with_value("gen", "prompt", TUNED) if tuned else opt.config
    asked = []

    def mean_reward(view, option):
        fresh = view.config["gen"]["prompt"] != TUNED and tuned
        asked.append((option, fresh))
        return table[option, fresh]

    original, LocalView.mean_reward = LocalView.mean_reward, mean_reward
    try:
        at = Position(config, {}, {}, frozenset(rejected), None)
        out = expand(opt._env(), at, "gen", "model", opt.s.kinds["choice"], [{"q": "x"}],
                     __import__("random").Random(0))
    finally:
        LocalView.mean_reward = original
    opt.store.close()
    return out, asked


def test_fresh_variants_are_scored_only_for_the_other_options(tmp_path):
    table = {("cheap", False): 0.5, ("strong", False): 0.0, ("strong", True): 1.0}
    (proposal, candidates, scored), asked = expand_model(tmp_path / "a", table)
    assert set(asked) == {("cheap", False), ("strong", False), ("strong", True)}
    assert dict(candidates) == {"cheap": 0.5, "strong": 1.0}  # strong by its better variant
    assert proposal.value == "strong" and proposal.reset == ("prompt",)
    assert [(r, x) for r, x in scored] == [((), 0.0), (("prompt",), 1.0)]
    # no tuned siblings: plain scores only, and the cheap model keeps its place
    out, plain = expand_model(tmp_path / "b", table, tuned=False)
    assert out.state.value == "no_change" and ("strong", True) not in plain


def test_a_rejected_variant_no_longer_speaks_for_its_option(tmp_path):
    table = {("cheap", False): 0.5, ("strong", False): 1.0, ("strong", True): 0.2}
    out, _ = expand_model(tmp_path, table, rejected={tried("gen", "model", "strong")})
    # the open, reset variant's reward: the cheap model now looks better and is kept
    assert dict(out.candidates) == {"cheap": 0.5, "strong": 0.2}
    assert out.state.value == "no_change"
