"""What a local optimizer sees (``LocalView``), what it returns (``Scored``) and its protocol.

A local optimizer improves one parameter of one component with every other slot fixed, scoring
candidates by the component's local reward over a search sample of recorded inputs x_k; it never
runs the rest of the system. Running the component itself on the sample is its only cost. It is a
ranker, like an Optuna sampler given frozen trials: it gets a read-only view and returns the
values it compared with their mean local rewards. Which of them the gate has already turned down,
coupled variants and per-instance selectors are the loop's business (``_step``).
"""

from __future__ import annotations

import abc
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.pairs import canonical_json, to_jsonable
from coalign.rewards import RewardModel
from coalign.runtime import Runtime
from coalign.task import Task
from coalign.trace import Step, Trace


class Scored(NamedTuple):
    """A candidate value and its mean local reward on the search sample."""

    value: Any
    reward: float


def value_key(value: Any) -> str:
    """A value's identity: its canonical JSON (text demos are dicts, weights are tensors)."""
    return canonical_json(to_jsonable(value))


@dataclass(frozen=True)
class LocalView:
    """One local optimization step, read-only: the config, the search inputs, the reward, and the
    means to score a value on them. No field can be reassigned; scoring only fills a memo of the
    component's outputs per value (the same value is never run twice in one step)."""

    task: Task
    component: str
    param: str
    config: SystemConfig
    search: Sequence[Mapping[str, Any]]  # recorded inputs x_k on the search sample
    reward: RewardModel
    runtime: Runtime
    rng: random.Random
    account: CostAccount
    proposer: str | None = None  # model name of the LM that proposes instructions
    # (x_k, y_k) the rollouts found better than an alternative: a pool for demonstrations
    rollout_winners: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]] = ()
    # a training run the loop carries between steps (``_carry``): the step trains a short
    # chunk on from ``carried`` (None: from the current value)
    continued: bool = False
    carried: Any = None
    _cache: dict[str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    _tokens: dict[str, float] = field(default_factory=dict, init=False, repr=False,
                                      compare=False)  # mean LLM tokens per search input

    @property
    def current(self) -> Any:
        return self.config[self.component][self.param]

    def outputs_under(self, value: Any) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """(x_k, y_k) for every search input, running the component alone under ``value``."""
        key = value_key(value)
        if key not in self._cache:
            cfg = self.config.with_value(self.component, self.param, value)
            steps: list[Step] = [
                self.task.system.run_component(self.component, x, cfg, self.runtime,
                                               example_id=f"search{i}")
                for i, x in enumerate(self.search)]
            self.account.add_traces("local_search", [Trace("search", cfg.digest, {}, steps)])
            self._cache[key] = [(s.inputs, s.outputs) for s in steps]
            self._tokens[key] = (sum(s.usage.tokens for s in steps) / len(steps)) if steps else 0.0
        return self._cache[key]

    def mean_tokens(self, value: Any) -> float:
        """Mean LLM tokens (prompt + completion) the component spends per search input."""
        self.outputs_under(value)
        return self._tokens[value_key(value)]

    def mean_reward(self, value: Any) -> float:
        items = self.outputs_under(value)
        if not items:
            return 0.0
        scores = self.reward.score_batch(self.component, items)
        return float(statistics.fmean(float(s) for s in scores))


LocalContext = LocalView  # the name before issue 22; kept for code written against it


def pick_best(scored: Sequence[Scored], open_: Sequence[bool], current: Any,
              rng: random.Random) -> Any:
    """The open candidate with the highest reward (the earliest on a tie) if it beats the current
    value's; else the current value ("no change")."""
    now = next((s.reward for s in scored if value_key(s.value) == value_key(current)), None)
    best = max((s for s, o in zip(scored, open_, strict=True) if o), key=lambda s: s.reward,
               default=None)
    if best is None or now is None or not best.reward > now:
        return current
    return best.value


class BaseLocalOptimizer(abc.ABC):
    """Ranks values of ``view.param``: ``propose`` returns every value it compared with its mean
    local reward, the current value included; ``pick`` turns the loop's filtered list into one."""

    @abc.abstractmethod
    def propose(self, view: LocalView) -> list[Scored]: ...

    def pick(self, scored: Sequence[Scored], open_: Sequence[bool], current: Any,
             rng: random.Random) -> Any:
        """One of the ``open_`` candidates, or ``current`` for no change (default: the best,
        if it beats the current value)."""
        return pick_best(scored, open_, current, rng)

    def alternatives(self, current: Any, rng: random.Random, k: int) -> tuple[Any, ...]:
        """Up to ``k`` values near ``current`` worth rolling out in stage 1 (default: none)."""
        return ()


class NoopOptimizer(BaseLocalOptimizer):
    """Null object: compares nothing, so the loop keeps the current value."""

    def propose(self, view: LocalView) -> list[Scored]:
        return []
