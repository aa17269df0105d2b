"""What a loop run is told: its budget, gate, proposer, targets and cost trade-offs, and which
train inputs each step uses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from coalign.budget import budget_default as _b
from coalign.errors import ConfigError
from coalign.optimize._gate import Gate
from coalign.optimize._kinds import KINDS, ParamKind


@dataclass
class LoopSettings:
    """Budget fields default to the run config's (``BudgetSpec``): one source of defaults."""

    iterations: int = _b("iterations")
    search_size: int = _b("search_size")
    fresh_inputs: int = _b("fresh_inputs")
    rollout_n: int = _b("rollout_n")
    policy_samples: int | None = _b("policy_samples")  # for kinds trained as a policy
    text_candidates: int = _b("text_candidates")  # candidates per local step (reference: 3 x 3)
    text_steps: int = _b("text_steps")
    text_alternatives: int = _b("text_alternatives")  # stage-1 rollouts under edited instructions
    rollout_demos: bool = _b("rollout_demos")  # text demos from rollout winners too (rule 12)
    stage1_inputs: int | None = _b("stage1_inputs")  # stage-1 rollout inputs (None: all train)
    stage1: str = _b("stage1")  # upfront | lazy (one component's rollouts before each step)
    warm_start: float = _b("warm_start")  # runs of global TPE before stage 1 (``_warm``)
    proposals: str = _b("proposals")  # local | portfolio (``_portfolio``)
    terminal_reward: str = _b("terminal_reward")  # exact | learned (``_exact``)
    # param kind -> local optimizer name, over the kind's default (see ``_local``)
    optimizers: Mapping[str, str] = field(default_factory=dict)
    text_optimizer: str = "opro"  # superseded by optimizers["text"]; still honoured
    weights_optimizer: str = "reinforce"  # superseded by optimizers["weights"]; still honoured
    temperature: float = _b("temperature")
    tau: float = _b("tau")
    gate: Gate = field(default_factory=Gate)
    proposer: str | None = None
    # components ("retriever") or single params ("retriever.k") to optimize; default: every
    # param of every component (``targets``)
    components: Sequence[str] | None = None
    # per-instance choices: relative cost per option, traded against the local reward
    choice_costs: Mapping[tuple[str, str], Mapping[Any, float]] = field(default_factory=dict)
    cost_weight: float = 0.0
    # components whose stage-1 alignment (cross-validated) is not above this are not drawn,
    # once it was measured on at least min_alignment_pairs decisive pairs (fewer say nothing)
    min_alignment: float = _b("min_alignment")
    completions: int = _b("completions")  # downstream completions per rollout candidate (m)
    min_alignment_pairs: int = _b("min_alignment_pairs")
    seed: int = 0
    # the param kinds the loop knows (``_kinds``): a new kind is one more entry here
    kinds: Mapping[str, ParamKind] = field(default_factory=lambda: KINDS)


T = TypeVar("T")


def targets(system: Any, names: Sequence[str] | None) -> list[tuple[str, str]]:
    """The (component, param) slots that ``names`` picks: a component's name picks all its
    params, ``component.param`` one; None picks every param of the system.

    Raises:
        ConfigError: a name is not a component of the system or a param of the component.
    """
    if names is None:
        return [(c.name, p) for c in system.components for p in c.params]
    out: list[tuple[str, str]] = []
    for name in names:
        comp_name, _, param = name.partition(".")
        params = system.component(comp_name).params  # an unknown component is refused here
        if param and param not in params:
            raise ConfigError(f"components: {comp_name!r} has no param {param!r}; its params "
                              f"are {sorted(params)}")
        out += [(comp_name, p) for p in ([param] if param else params)
                if (comp_name, p) not in out]
    return out


def window(items: Sequence[T], t: int, size: int) -> list[T]:
    """Step ``t``'s ``size`` items (the search sample, the fresh adaptation inputs): consecutive
    steps take consecutive windows of ``items``, wrapping around."""
    n = min(size, len(items))
    start = (t * n) % len(items) if items else 0
    return [items[(start + i) % len(items)] for i in range(n)]
