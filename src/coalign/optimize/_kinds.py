"""The per-kind registry: everything the loop and the baselines decide by a param's kind.

A param kind (``Param.kind``: ``text``, ``choice``, ``weights``) is one ``ParamKind`` entry:
its local optimizers by name (a run config picks one with ``optimizers: {kind: name}``), the
rollout specs stage 1 and stage 2 collect pairs with, how the baselines draw or enumerate its
values, and the loop rules that apply to it. Nothing else in the package compares kinds, so a
new kind is one entry here (passed to the loop as ``LoopSettings.kinds``) plus its optimizer;
a param whose kind has no entry is refused when the loop or a baseline is built.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from coalign.errors import ConfigError
from coalign.optimize._base import BaseLocalOptimizer
from coalign.optimize._choice import ExpChoiceOptimizer
from coalign.optimize._pareto import ParetoTextOptimizer
from coalign.optimize._text import EDITS, TextOptimizer
from coalign.optimize._weights import ReinforceWeightsOptimizer
from coalign.params import Param, TextValue
from coalign.rollouts import RolloutSpec

# called with the loop's ``LoopSettings`` (which holds the kinds, so it is not imported here)
Build = Callable[[Any], BaseLocalOptimizer]


@dataclass(frozen=True)
class RolloutAsk:
    """What a kind's ``rollouts`` hook is told about one param of the component collected."""

    name: str
    param: Param
    current: Any
    n: int  # temperature samples per input (``rollout_n``; 0: none)
    temperature: float
    alternatives: int  # values near ``current`` to roll out too (``text_alternatives``)
    nearby: Callable[[int], tuple[Any, ...]]  # up to k such values, from the kind's optimizer


def sampled(ask: RolloutAsk) -> list[RolloutSpec]:
    """Temperature samples of the component's output (a policy samples orders), if any."""
    return [RolloutSpec(n=ask.n, temperature=ask.temperature)] if ask.n else []


def keep_current(param: Param, current: Any, rng: random.Random) -> Any:
    return current


def no_values(param: Param) -> tuple[Any, ...]:
    return ()


def no_pool(param: Param, start: Any) -> list[Any] | None:
    return None


@dataclass(frozen=True)
class ParamKind:
    """One param kind's entry. The defaults suit a kind that only its optimizer understands:
    sampled rollouts, left alone by the global baselines, none of the loop's kind rules."""

    name: str
    optimizers: Mapping[str, Build]  # by name; the run config's ``optimizers: {kind: name}``
    default: str  # the optimizer used when none is named
    rollouts: Callable[[RolloutAsk], list[RolloutSpec]] = sampled
    # random search: a random value of the param (given its current one)
    random_value: Callable[[Param, Any, random.Random], Any] = keep_current
    # grid search (and finite replay spaces): every value, in order; (): not enumerable
    finite_values: Callable[[Param], tuple[Any, ...]] = no_values
    # REINFORCE-global: the values its softmax slot ranges over; None: no categorical slot
    policy_values: Callable[[Param, Any], list[Any] | None] = no_pool
    network: bool = False  # REINFORCE-global trains the value itself as a policy network
    per_instance: bool = False  # scope per_instance: the LRF selector picks a value per input
    coupled: bool = False  # a switch is also offered with its component's tuned params reset
    rollout_demos: bool = False  # its optimizer draws demos from the rollouts' winning outputs
    same_outputs_rejected: bool = False  # a value with a rejected value's outputs is rejected

    def __post_init__(self) -> None:
        if self.default not in self.optimizers:
            raise ConfigError(f"param kind {self.name!r}: default optimizer {self.default!r} "
                              f"is not one of its optimizers {sorted(self.optimizers)}")


# -- text -------------------------------------------------------------------------------------

def _text_rollouts(ask: RolloutAsk) -> list[RolloutSpec]:
    specs = sampled(ask)
    if ask.param.candidates:  # a finite space: every candidate
        return [*specs, RolloutSpec(param=ask.name, alternatives=ask.param.candidates)]
    alts = ask.nearby(ask.alternatives) if ask.alternatives else ()
    if alts:  # greedy outputs under each instruction, the current one included
        specs.append(RolloutSpec(param=ask.name, alternatives=(ask.current, *alts)))
    return specs


def _text_random(param: Param, current: Any, rng: random.Random) -> Any:
    if param.candidates:
        return rng.choice(param.candidates)
    edit = EDITS[rng.randrange(len(EDITS))]
    return TextValue(edit(current.instruction), current.demos)


def _text_pool(param: Param, start: Any) -> list[Any]:
    """A finite space's candidates, else the start and one variant per edit, without repeats."""
    if param.candidates:
        return list(param.candidates)
    pool = {start.instruction: start}
    for edit in EDITS:
        text = edit(start.instruction)
        pool.setdefault(text, TextValue(text, start.demos))
    return list(pool.values())


TEXT = ParamKind(
    "text",
    {"opro": lambda s: TextOptimizer(s.text_candidates, s.text_steps),
     # the beam search gets the evaluations OPRO spends in its reference 3 x 3
     "pareto": lambda s: ParetoTextOptimizer(budget=3 * s.text_candidates)},
    default="opro", rollouts=_text_rollouts, random_value=_text_random,
    finite_values=lambda p: p.candidates, policy_values=_text_pool,
    rollout_demos=True, same_outputs_rejected=True)

# -- choice -----------------------------------------------------------------------------------


def _choice_rollouts(ask: RolloutAsk) -> list[RolloutSpec]:
    # every option; a per-instance one keyed by the option (its LRF ranks options before a run)
    return [RolloutSpec(param=ask.name, alternatives=tuple(ask.param.options),
                        choice_key=ask.param.scope == "per_instance")]


CHOICE = ParamKind(
    "choice", {"exp": lambda s: ExpChoiceOptimizer(s.tau)}, default="exp",
    rollouts=_choice_rollouts, random_value=lambda p, current, rng: rng.choice(p.options),
    finite_values=lambda p: tuple(p.options), policy_values=lambda p, start: list(p.options),
    per_instance=True, coupled=True)

# -- weights ----------------------------------------------------------------------------------

WEIGHTS = ParamKind(
    "weights",
    {"reinforce": lambda s: ReinforceWeightsOptimizer(temperature=s.temperature, seed=s.seed),
     "ppo": lambda s: ReinforceWeightsOptimizer(temperature=s.temperature, seed=s.seed,
                                                ppo=True)},
    default="reinforce", network=True)

KINDS: Mapping[str, ParamKind] = MappingProxyType({k.name: k for k in (TEXT, CHOICE, WEIGHTS)})


def kind_of(kinds: Mapping[str, ParamKind], param: Param, where: str) -> ParamKind:
    """``param``'s entry in ``kinds``; ``where`` names the param in the error."""
    entry = kinds.get(param.kind)
    if entry is None:
        raise ConfigError(f"{where}: param kind {param.kind!r} is not registered (have "
                          f"{sorted(kinds)}); add a ParamKind for it to LoopSettings.kinds")
    return entry


def optimizer_problem(kinds: Mapping[str, ParamKind], chosen: Mapping[str, str]) -> str | None:
    """Why ``chosen`` (param kind -> optimizer name) does not fit ``kinds``; None if it does."""
    for kind, name in chosen.items():
        if kind not in kinds:
            return f"unknown param kind {kind!r}; use one of {sorted(kinds)}"
        if name not in kinds[kind].optimizers:
            return (f"{kind}: unknown optimizer {name!r}; use one of "
                    f"{sorted(kinds[kind].optimizers)}")
    return None


def rollout_specs(system: Any, config: Any, component: str,
                  optimizers: Mapping[str, BaseLocalOptimizer], settings: Any,
                  only: Collection[str] | None = None) -> list[RolloutSpec]:
    """Each param's rollout specs under ``config`` (``only``: of these params), as its kind's
    entry says; ``settings``: the loop's (``LoopSettings``: kinds, rollout_n, policy_samples,
    temperature, text_alternatives, completions, seed)."""
    s = settings
    specs = []
    for name, param in system.component(component).params.items():
        if only is not None and name not in only:
            continue
        current = config[component][name]
        optimizer = optimizers.get(param.kind)
        rng = random.Random(f"{s.seed}:alternatives:{component}.{name}")

        def nearby(k: int, current: Any = current, optimizer: Any = optimizer,
                   rng: random.Random = rng) -> tuple[Any, ...]:
            return optimizer.alternatives(current, rng, k) if optimizer else ()

        kind = s.kinds[param.kind]
        n = s.policy_samples if kind.network and s.policy_samples is not None else s.rollout_n
        specs += kind.rollouts(RolloutAsk(name, param, current, n, s.temperature,
                                          s.text_alternatives, nearby))
    return [dataclasses.replace(sp, m=s.completions) for sp in specs]
