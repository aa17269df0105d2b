"""What a local optimizer sees (``LocalContext``) and the protocol it implements.

A local optimizer improves one parameter of one component with every other slot fixed, scoring
candidates by the component's local reward over a search sample of recorded inputs x_k; it never
runs the rest of the system. Running the component itself on the sample is its only cost.
"""

from __future__ import annotations

import abc
import json
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.optimize._coupled import variant_key
from coalign.pairs import canonical_json, to_jsonable
from coalign.rewards import RewardModel
from coalign.runtime import Runtime
from coalign.task import Task
from coalign.trace import Step, Trace


@dataclass(frozen=True)
class LocalContext:
    """One local optimization step: what it is given and the means to score candidates.

    No field can be reassigned (the config, search inputs and reward are the step's). Two things
    change as candidates are scored: a memo of the component's outputs per value, and
    ``history``, where the optimizer records the (value, mean reward) pairs it compared; the loop
    writes them to the ledger.
    """

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
    history: list[tuple[Any, float]] = field(default_factory=list)  # (value, mean reward)
    # (x_k, y_k) the rollouts found better than an alternative: a pool for demonstrations
    rollout_winners: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]] = ()
    # canonical JSON of the values the gate rejected for this param under the current config
    rejected: frozenset[str] = frozenset()
    # this config with the component's other tuned params back at their starting values (set
    # for a choice whose siblings were tuned: see ``_coupled``); ``fresh=True`` scores under it
    starting: SystemConfig | None = None
    # a choice's rejected variants under this config (``_coupled.variant_key``) and the params
    # its fresh variant resets: a rejected variant no longer speaks for its option
    rejected_variants: frozenset[str] = frozenset()
    reset_names: tuple[str, ...] = ()
    # the param's kind rejects a value whose search outputs equal a rejected value's (text)
    same_outputs_rejected: bool = False
    _cache: dict[str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = field(
        default_factory=dict)
    _tokens: dict[str, float] = field(default_factory=dict)  # mean LLM tokens per search input

    @property
    def current(self) -> Any:
        return self.config[self.component][self.param]

    def outputs_under(self, value: Any, fresh: bool = False
                      ) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """(x_k, y_k) for every search input, running the component alone under ``value`` (with
        ``fresh``, in the ``starting`` config)."""
        base = self.starting if fresh and self.starting is not None else self.config
        key = ("fresh:" if base is not self.config else "") + canonical_json(to_jsonable(value))
        if key not in self._cache:
            cfg = base.with_value(self.component, self.param, value)
            steps: list[Step] = [
                self.task.system.run_component(self.component, x, cfg, self.runtime,
                                               example_id=f"search{i}")
                for i, x in enumerate(self.search)]
            self.account.add_traces("local_search", [Trace("search", cfg.digest, {}, steps)])
            self._cache[key] = [(s.inputs, s.outputs) for s in steps]
            self._tokens[key] = (sum(s.usage.tokens for s in steps) / len(steps)) if steps else 0.0
        return self._cache[key]

    def variant_open(self, value: Any, fresh: bool) -> bool:
        """The gate has not rejected ``value`` as proposed (or, ``fresh``, with the component's
        tuned params reset) under this config."""
        return variant_key(value, self.reset_names if fresh else ()) not in self.rejected_variants

    def was_rejected(self, value: Any) -> bool:
        """The gate rejected ``value`` under this config, or (``same_outputs_rejected``: text) a
        value with the same outputs on the search sample: the local reward cannot tell the two
        apart, so validating it would mostly re-measure what the gate already turned down. Seen
        on HotpotQA: with the same demos, three reworded instructions gave identical search
        outputs and were validated one after another."""
        if canonical_json(to_jsonable(value)) in self.rejected:
            return True
        if not self.same_outputs_rejected or not self.rejected:
            return False
        spec = self.task.system.component(self.component).params[self.param]
        # search inputs are the current config's, so a rejected value's outputs come from the
        # response cache when its own step searched the same sample
        outputs = self._signature(value)
        return any(self._signature(spec.from_json(json.loads(r))) == outputs
                   for r in self.rejected)

    def _signature(self, value: Any) -> str:
        return canonical_json(to_jsonable([y for _, y in self.outputs_under(value)]))

    def mean_tokens(self, value: Any) -> float:
        """Mean LLM tokens (prompt + completion) the component spends per search input."""
        self.outputs_under(value)
        return self._tokens[canonical_json(to_jsonable(value))]

    def mean_reward(self, value: Any, fresh: bool = False) -> float:
        items = self.outputs_under(value, fresh)
        if not items:
            return 0.0
        scores = self.reward.score_batch(self.component, items)
        return float(statistics.fmean(float(s) for s in scores))


class BaseLocalOptimizer(abc.ABC):
    """Proposes a new value for ``ctx.param``; returning the current value means "no change"."""

    @abc.abstractmethod
    def propose(self, ctx: LocalContext) -> Any: ...

    def alternatives(self, current: Any, rng: random.Random, k: int) -> tuple[Any, ...]:
        """Up to ``k`` values near ``current`` worth rolling out in stage 1 (default: none)."""
        return ()


class NoopOptimizer(BaseLocalOptimizer):
    """Null object: always keeps the current value."""

    def propose(self, ctx: LocalContext) -> Any:
        return ctx.current

