"""The per-kind registry (issue 22, item 3): a new param kind is one ``ParamKind`` entry plus its
optimizer; run configs choose optimizers per kind, checked against the registry."""

from __future__ import annotations

import pytest

from coalign.component import FunctionComponent
from coalign.data import Example
from coalign.errors import ConfigError
from coalign.job import Job, parse_run_config
from coalign.optimize import BaseLocalOptimizer, LoopSettings, Optimizer, Scored
from coalign.optimize._baselines import grid_search, random_search
from coalign.optimize._kinds import KINDS, ParamKind, rollout_specs
from coalign.optimize._local import local_optimizers, optimizer_names
from coalign.params import Param
from coalign.rewards import HashingBackbone, LocalRewardModel
from coalign.rollouts import RolloutSpec
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.system import System
from coalign.task import Task


class Dial(Param):
    """A toy kind: an integer between ``lo`` and ``hi``."""

    kind = "dial"

    def __init__(self, default: int, lo: int, hi: int, **kw) -> None:
        self.lo, self.hi = lo, hi
        super().__init__(default, **kw)

    def validate(self, value):
        if not isinstance(value, int) or not self.lo <= value <= self.hi:
            raise ConfigError(f"dial value must be an int in [{self.lo}, {self.hi}], got {value!r}")
        return value

    def values(self) -> tuple[int, ...]:
        return tuple(range(self.lo, self.hi + 1))


class NudgeOptimizer(BaseLocalOptimizer):
    """Its optimizer: ranks the current value and one step up or down by local reward (the loop
    proposes the best one the gate has not rejected, if it beats the current value)."""

    def propose(self, view):
        spec = view.task.system.component(view.component).params[view.param]
        near = [v for v in (view.current - 1, view.current + 1) if spec.lo <= v <= spec.hi]
        return [Scored(v, view.mean_reward(v)) for v in (view.current, *near)]


# the one registry entry: its optimizer, and every value compared in rollouts
DIAL = ParamKind("dial", {"nudge": lambda s: NudgeOptimizer()}, default="nudge",
                 rollouts=lambda ask: [RolloutSpec(param=ask.name,
                                                   alternatives=ask.param.values())],
                 finite_values=Dial.values)
WITH_DIAL = {**KINDS, "dial": DIAL}


def dial_task(scope: str = "global") -> Task:
    knob = FunctionComponent("knob", lambda x, c, ctx: {"level": c["level"]}, ["q"], ["level"],
                             params={"level": Dial(0, 0, 5, scope=scope)},
                             description="sets a level")
    score = FunctionComponent("score", lambda x, c, ctx: {"score": 1 - abs(x["level"] - 3) / 5},
                              ["level"], ["score"])
    return Task(System("dial_toy", [knob, score], ["q"], "score"), lambda p, e: float(p), "s")


def dial_loop(tmp_path, kinds=WITH_DIAL, scope: str = "global", iterations: int = 5) -> Optimizer:
    data = [Example(f"{s}{i}", {"q": f"{s} {i}"}, None) for s in "tv" for i in range(4)]
    reward = LocalRewardModel(HashingBackbone(64), {"knob": "sets a level"})
    settings = LoopSettings(proposals="local", iterations=iterations, search_size=3,
                            fresh_inputs=2, rollout_n=0, seed=0, kinds=kinds)
    return Optimizer(dial_task(scope), data[:4], data[4:], Runtime(), RunStore(tmp_path),
                     reward, settings)


def test_a_registered_toy_kind_is_optimized_by_the_loop(tmp_path):
    opt = dial_loop(tmp_path)
    assert isinstance(opt.optimizers["dial"], NudgeOptimizer)
    history = opt.run()
    assert opt.config["knob"]["level"] == 3 and opt.val_score == 1.0  # 0 -> 3, one step a time
    accepted = [r for r in history if r.accepted]
    assert [r.value for r in accepted] == [1, 2, 3]
    assert all(r.val_after > r.val_before for r in accepted)
    # stage 1 collected pairs from the kind's rollout specs: one candidate per dial value
    pairs = opt.store.pairs("knob")
    assert {o["level"] for p in pairs for o in (p.output_a, p.output_b)} == set(range(6))
    _, _, row = opt.store.steps()[0]
    assert {c["value"] for c in row["candidates"]} == {0, 1}


def test_the_baselines_draw_a_registered_kind_through_its_entry(tmp_path):
    task = dial_task()
    val = [Example(f"v{i}", {"q": f"v {i}"}, None) for i in range(2)]
    grid = grid_search(task, val, Runtime(), 100, kinds=WITH_DIAL)
    assert grid.best.to_json()["knob"]["level"] == 3 and len(grid.tried) == 6
    # no random_value in its entry: random search keeps the value, as for weights
    rand = random_search(task, val, Runtime(), 6, kinds=WITH_DIAL)
    assert {d for d, _ in rand.tried} == {task.system.default_config().digest}


def test_an_unregistered_kind_is_refused_when_the_loop_is_built(tmp_path):
    with pytest.raises(ConfigError, match=r"^knob.level: param kind 'dial' is not registered "
                                          r"\(have \['choice', 'text', 'weights'\]\); add a "
                                          r"ParamKind for it to LoopSettings.kinds$"):
        dial_loop(tmp_path / "a", kinds=KINDS)
    with pytest.raises(ConfigError, match="^grid_search: knob.level: param kind 'dial'"):
        grid_search(dial_task(), [Example("v", {"q": "v"}, None)], Runtime(), 10)


def test_a_kind_without_a_selector_cannot_be_per_instance(tmp_path):
    with pytest.raises(ConfigError, match="^knob.level: a 'dial' param cannot be per_instance"):
        dial_loop(tmp_path, scope="per_instance")


def test_a_kind_default_must_be_one_of_its_optimizers():
    with pytest.raises(ConfigError, match="default optimizer 'hill' is not one of"):
        ParamKind("dial", {"nudge": lambda s: NudgeOptimizer()}, default="hill")


def test_optimizers_are_chosen_per_kind_with_the_superseded_fields_as_aliases():
    assert optimizer_names(LoopSettings()) == {"text": "opro", "choice": "exp",
                                               "weights": "reinforce"}
    assert optimizer_names(LoopSettings(optimizers={"text": "pareto", "weights": "ppo"})) == \
        optimizer_names(LoopSettings(text_optimizer="pareto", weights_optimizer="ppo")) == \
        {"text": "pareto", "choice": "exp", "weights": "ppo"}
    # the same choice twice is fine; two different ones are refused
    assert optimizer_names(LoopSettings(text_optimizer="pareto",
                                        optimizers={"text": "pareto"}))["text"] == "pareto"
    with pytest.raises(ConfigError, match=r"^loop setting optimizers: text: 'opro' disagrees "
                                          r"with text_optimizer 'pareto'; set only "
                                          r"optimizers.text \(text_optimizer is superseded\)$"):
        local_optimizers(LoopSettings(text_optimizer="pareto", optimizers={"text": "opro"}))
    with pytest.raises(ConfigError, match=r"^loop setting optimizers: choice: unknown optimizer "
                                          r"'tpe'; use one of \['exp'\]$"):
        local_optimizers(LoopSettings(optimizers={"choice": "tpe"}))


@pytest.mark.parametrize(("raw", "message"), [
    ({"optimizers": {"txt": "opro"}},
     "field 'optimizers': unknown param kind 'txt'; use one of ['choice', 'text', 'weights']"),
    ({"optimizers": {"weights": "sgd"}},
     "field 'optimizers': weights: unknown optimizer 'sgd'; use one of ['ppo', 'reinforce']"),
    ({"weights_optimizer": "ppo", "optimizers": {"weights": "reinforce"}},
     "field 'optimizers': weights: 'reinforce' disagrees with weights_optimizer 'ppo'; set only "
     "optimizers.weights (weights_optimizer is superseded)"),
])
def test_run_config_optimizers_are_checked_against_the_registry(raw, message):
    with pytest.raises(ConfigError) as err:
        parse_run_config(raw)
    assert str(err.value) == f"run config: {message}"


def test_configs_without_the_new_field_keep_their_digest():
    # digests computed before the field existed (commit ee0364c): old run dirs stay valid
    assert parse_run_config({}).digest == (
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a")
    assert parse_run_config({"text_optimizer": "pareto", "weights_optimizer": "ppo",
                             "budget": {"iterations": 2}}).digest == (
        "5d4b10a7987f015e966d07cf373b974f8eb00ff14a3330e08417d874cc3835b8")
    assert parse_run_config({"optimizers": {}}).digest == parse_run_config({}).digest
    assert parse_run_config({"optimizers": {"text": "pareto"}}).digest != \
        parse_run_config({}).digest


def test_a_run_config_chooses_optimizers_per_kind(tmp_path):
    cfg = parse_run_config({"system": "multihop_qa_rerank", "backbone": "hashing",
                            "optimizers": {"text": "pareto", "weights": "ppo"},
                            "split": {"train": 1, "val": 1, "test": 1}})
    opt = Job.open(cfg, tmp_path / "run").optimizer
    assert type(opt.optimizers["text"]).__name__ == "ParetoTextOptimizer"
    assert opt.optimizers["weights"].ppo
    opt.store.close()


@pytest.mark.parametrize(("policy_samples", "network", "n"),
                         [(None, True, 0), (2, True, 2), (2, False, 0)])
def test_policy_samples_reach_only_kinds_trained_as_a_policy(tmp_path, policy_samples, network,
                                                             n):
    from coalign.optimize._kinds import sampled

    kind = ParamKind("dial", {"nudge": lambda s: NudgeOptimizer()}, default="nudge",
                     rollouts=sampled, network=network)
    opt = dial_loop(tmp_path, kinds={**KINDS, "dial": kind})
    opt.s.policy_samples = policy_samples  # rollout_n stays 0: LLM samples off (replay)
    specs = rollout_specs(opt.system, opt.config, "knob", opt.optimizers, opt.s)
    assert [sp.n for sp in specs] == ([n] if n else [])


def test_policy_samples_is_a_budget_field_refusing_one_sample():
    base = {"system": "multihop_qa"}
    cfg = parse_run_config({**base, "budget": {"rollout_n": 0, "policy_samples": 4}}, "t")
    assert (cfg.budget.rollout_n, cfg.budget.policy_samples) == (0, 4)
    with pytest.raises(ConfigError, match="policy_samples"):
        parse_run_config({**base, "budget": {"policy_samples": 1}}, "t")
