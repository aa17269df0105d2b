"""Params trained as a policy (a decider's ``Weights``) on replay.

A table holds the LLM outputs of its candidate space only, so rollouts on replay compare
candidates (``rollout_n: 0``). A policy's own samples are different: a component that draws
its output from a torch policy needs no LLM for it, and where nothing downstream calls an LLM
its samples replay as well as its greedy output does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coalign.errors import ConfigError

if TYPE_CHECKING:
    from coalign.task import Task

POLICY_SAMPLES = 4  # the loop arm's draws per input for such a param (the weights optimizer's)


def _llms_fed(task: Task) -> dict[str, list[str]]:
    """Per component with a param trained as a policy, the LLM components downstream of it."""
    from coalign.component import LLMComponent
    from coalign.optimize import KINDS  # the loop's registry imports torch: only here

    system = task.system
    return {c.name: [d for d in sorted(system.descendants(c.name))
                     if isinstance(system.component(d), LLMComponent)]
            for c in system.components
            if any(KINDS[p.kind].network for p in c.params.values() if p.kind in KINDS)}


def check_policy_samples(task: Task) -> None:
    """Refuse policy samples that would feed an LLM: the table never saw those inputs."""
    for name, llms in _llms_fed(task).items():
        if llms:
            raise ConfigError(f"run config field 'budget.policy_samples': {name}'s samples "
                              f"feed LLM components ({', '.join(llms)}) whose inputs the replay "
                              "table does not hold; use policy_samples: 0")


def replay_policy_samples(task: Task) -> int | None:
    """``POLICY_SAMPLES`` if ``task`` has a param trained as a policy and its samples replay;
    None otherwise (nothing to sample, or the samples would feed an LLM)."""
    fed = _llms_fed(task)
    return POLICY_SAMPLES if fed and not any(fed.values()) else None
