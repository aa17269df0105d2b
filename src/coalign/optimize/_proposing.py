"""How the loop turns a drawn (component, param) into a proposal: the search sample's recorded
inputs, the local optimizer of the param's kind, the per-instance choice's candidates, and the
coupled variants of a switched choice. A mixin of ``Optimizer``: it reads the loop's state (the
current config and policies, the rejections since the last accept) and writes what the ledger
shows about the step (the candidates compared, the variants scored)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from coalign.config import SystemConfig
from coalign.data._base import Example
from coalign.errors import ConfigError
from coalign.optimize._base import BaseLocalOptimizer, LocalContext
from coalign.optimize._choice import POLICY, cost_penalized, option_scores, per_instance_proposal
from coalign.optimize._coupled import (
    Variant,
    at_start,
    best_variant,
    exhausted,
    open_variants,
    tuned_siblings,
    variants,
)
from coalign.optimize._selectors import Policies
from coalign.optimize._settings import LoopSettings, window
from coalign.optimize._text import rollout_winners
from coalign.pairs import canonical_json
from coalign.runtime import Runtime

if TYPE_CHECKING:
    from coalign.costs import CostAccount
    from coalign.rewards import LocalRewardModel
    from coalign.store import RunStore
    from coalign.system import System
    from coalign.task import Task


class Proposing:
    task: Task
    system: System
    train: list[Example]
    store: RunStore
    reward: LocalRewardModel
    account: CostAccount
    s: LoopSettings
    optimizers: dict[str, BaseLocalOptimizer]
    config: SystemConfig
    policies: dict[tuple[str, str], str]
    _rejected: dict[tuple[str, str], set[str]]
    _scored: list[tuple[Any, float]]
    _variants: list[dict[str, Any]]
    _inputs: tuple[tuple[int, str], list[dict[str, Any]]] | None
    _ctx: tuple[tuple[int, str, str], LocalContext] | None  # this step's local context
    runtime_for: Callable[[Policies], Runtime]

    def _propose(self, component: str, param: str, kind: str, rng: random.Random,
                 t: int) -> Any:
        if kind not in self.optimizers:
            raise ConfigError(f"no local optimizer for param kind {kind!r} "
                              f"({component}.{param}); have {sorted(self.optimizers)}")
        rt = self.runtime_for(self.policies)
        inputs = self._search_inputs(component, rt, t)
        rejected = variants = frozenset(self._rejected.get((component, param), ()))
        starting, siblings = None, ()
        rules = self.s.kinds[kind]
        if rules.coupled:  # an option stays open while one of its variants is
            start, siblings = self._siblings(component, param)
            rejected = exhausted(self.system.component(component).params[param].options,
                                 siblings, variants)
            starting = at_start(self.config, start, component, siblings) if siblings else None
        ctx = LocalContext(self.task, component, param, self.config, inputs, self.reward, rt,
                           rng, self.account, proposer=self.s.proposer, rejected=rejected,
                           rollout_winners=rollout_winners(self.store, component)
                           if rules.rollout_demos else (), starting=starting,
                           rejected_variants=variants, reset_names=tuple(siblings),
                           same_outputs_rejected=rules.same_outputs_rejected)
        value = self.optimizers[kind].propose(ctx)
        self._scored, self._ctx = ctx.history, ((t, component, param), ctx)
        return value

    def _search_inputs(self, component: str, rt: Runtime, t: int) -> list[dict[str, Any]]:
        """The component's inputs x_k on step ``t``'s search sample under the current config.
        The sample moves through the train split from step to step: a component drawn again
        under an unchanged config would otherwise score the same inputs again (on HotpotQA the
        answer writer's candidates tied with its prompt on one fixed sample six times). Stage 1
        ran every train input under the starting config, so the prefixes come from the cache."""
        if self._inputs is not None and self._inputs[0] == (t, component):
            return self._inputs[1]  # asked again within the step: counted once
        traces = [self.system.run(e.id, e.inputs, self.config, rt)
                  for e in window(self.train, t, self.s.search_size)]
        self.account.add_traces("local_search", traces)
        inputs = [tr.step(component).inputs for tr in traces if not tr.step(component).skipped]
        self._inputs = ((t, component), inputs)
        return inputs

    def _propose_per_instance(self, component: str, param: str, rng: random.Random,
                              t: int) -> Any:
        options = self.system.component(component).params[param].options
        inputs = self._search_inputs(component, self.runtime_for(self.policies), t)
        scores = cost_penalized(option_scores(self.reward, component, param, inputs, options),
                                options, self.s.choice_costs.get((component, param)),
                                self.s.cost_weight)
        self._scored = list(zip(options, scores.mean(axis=0).tolist() if len(scores) else [],
                                strict=False))
        rejected = canonical_json(POLICY) in self._rejected.get((component, param), ())
        return per_instance_proposal(scores, options, self.config[component][param],
                                     (component, param) in self.policies, rng, self.s.tau,
                                     policy_rejected=rejected)

    def _siblings(self, component: str, param: str) -> tuple[SystemConfig, tuple[str, ...]]:
        """The starting config, and ``param``'s siblings that are off their starting values."""
        start = self.system.default_config()
        return start, tuned_siblings(self.config, start, component, param)

    def _couple(self, component: str, param: str, value: Any, proposed: SystemConfig,
                policies: Policies, t: int) -> Variant | None:
        """The switch to ``value`` as proposed or with the component's tuned params back at
        their starting values (see ``_coupled``): of the variants not yet rejected, the one
        whose outputs on the search sample the local reward ranks higher; None if none is left."""
        start, siblings = self._siblings(component, param)
        options = open_variants(value, variants(proposed, start, component, siblings),
                                self._rejected.get((component, param), set()))
        if not options:
            return None
        if self._ctx is not None and self._ctx[0] == (t, component, param):
            ctx = self._ctx[1]  # the choice optimizer's: its variants are scored already
        else:  # a per-instance param set globally: run under the proposal's policies
            ctx = LocalContext(self.task, component, param, self.config,
                               self._search_inputs(component, self.runtime_for(self.policies), t),
                               self.reward, self.runtime_for(policies), random.Random(0),
                               self.account, starting=at_start(self.config, start, component,
                                                               siblings) if siblings else None)
        best, scored = best_variant(options, lambda v: ctx.mean_reward(value, bool(v.reset)))
        self._variants = [{"reset": list(v.reset), "local_reward": r} for v, r in scored]
        return best
