"""``coalign.testing``'s local-optimizer contract over every optimizer of every registered param
kind, the toy ``dial`` kind of ``test_kinds`` included. Each kind gets a toy param whose
current value can be improved on: the contract asks for a proposal to look at."""

from __future__ import annotations

import random

import numpy as np
import pytest

from coalign.component import FunctionComponent, LLMComponent
from coalign.costs import CostAccount
from coalign.optimize import LocalView, LoopSettings
from coalign.optimize._kinds import KINDS
from coalign.params import Choice
from coalign.rewards import BaseRewardModel
from coalign.runtime import Runtime
from coalign.system import System
from coalign.task import Task
from coalign.testing.pytest_optimizers import LocalOptimizerContract, optimizer_cases
from tests.fakes import FakeLM
from tests.test_kinds import DIAL, dial_task
from tests.test_reranker import rerank_inputs
from tests.test_weights_optimizer import context as rerank_context
from tests.test_weights_optimizer import strip

SETTINGS = LoopSettings()
ALL = {**KINDS, "dial": DIAL}
SEARCH = [{"q": f"question {i}"} for i in range(3)]


class ByField(BaseRewardModel):
    """The local reward in these toys: a number read from one output field, scaled."""

    def __init__(self, read, scale: float = 1.0) -> None:
        self.read, self.scale = read, scale

    def score_batch(self, component, items):
        return np.array([self.scale * float(self.read(y)) for _, y in items])


def _context(task, component, param, reward, runtime, search):
    def make(seed, *, empty=False):
        return LocalView(task, component, param, task.system.default_config(),
                         [] if empty else list(search), reward, runtime, random.Random(seed),
                         CostAccount([c.name for c in task.system.components]))
    return make


def text_context():
    # the writer's output is its instruction's word count: every added sentence scores higher
    writer = LLMComponent("writer", ["q"], "draft", "Write something.", model="m")
    task = Task(System("writer", [writer], ["q"], "draft"), lambda p, e: 0.0, "s")
    lm = FakeLM(lambda r: str(len(r.messages[0].content.split())))
    return _context(task, "writer", "prompt", ByField(lambda y: y["draft"], 0.1),
                    Runtime(lms={"m": lm}), SEARCH)


def choice_context():
    pick = FunctionComponent("pick", lambda x, c, ctx: {"level": c["level"]}, ["q"], ["level"],
                             params={"level": Choice([1, 2, 3], 1)})
    task = Task(System("pick", [pick], ["q"], "level"), lambda p, e: 0.0, "s")
    # scaled so that exp(r / tau) sampling all but always takes the best open option
    return _context(task, "pick", "level", ByField(lambda y: y["level"], 10.0), Runtime(), SEARCH)


def weights_context():
    search = strip(rerank_inputs(8, seed=1))

    def make(seed, *, empty=False):
        return rerank_context([] if empty else search, seed)  # the reranker toy
    return make


def dial_context():
    return _context(dial_task(), "knob", "level",
                    ByField(lambda y: 1 - abs(y["level"] - 3) / 5), Runtime(), SEARCH)


CONTEXTS = {"text": text_context(), "choice": choice_context(), "weights": weights_context(),
            "dial": dial_context()}
# component runs per search input each may spend, from its settings
MAX_RUNS = {"text/opro": 1 + SETTINGS.text_candidates * SETTINGS.text_steps,
            "text/pareto": 1 + 3 * SETTINGS.text_candidates,
            "choice/exp": 3,  # each option once (coupled variants are the loop's)
            "weights/reinforce": 15 * 4 + 2, "weights/ppo": 15 * 4 + 2,  # draws + 2 scorings
            "dial/nudge": 3}
GAPS: dict[str, dict[str, str]] = {}  # optimizer -> contract test -> why it fails (strict xfail)


class TestLocalOptimizers(LocalOptimizerContract):
    @pytest.fixture(params=optimizer_cases(ALL, SETTINGS, CONTEXTS, MAX_RUNS, GAPS))
    def case(self, request):
        return request.param


def test_every_registered_kind_needs_a_context_to_be_covered():
    with pytest.raises(ValueError, match=r"no context factory for param kind\(s\) \['dial'\]"):
        optimizer_cases(ALL, SETTINGS, {k: CONTEXTS[k] for k in KINDS})
