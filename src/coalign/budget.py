"""``BudgetSpec``: the run config's ``budget`` block, and the one source of the loop's defaults.

``LoopSettings`` takes its budget defaults from here, so the Python API and a run config start
from the same numbers. They are sized for a CLI run on 2 CPU cores: 4 iterations, each scoring
candidates on 4 train inputs and adapting on the pairs of 4 fresh ones.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from coalign.errors import ConfigError


class BudgetSpec(BaseModel):
    # strict: YAML's `yes` is no iteration count, nor is 1.5 a sample size
    model_config = ConfigDict(extra="forbid", strict=True)

    iterations: int = Field(4, ge=0)
    search_size: int = Field(4, ge=1)
    fresh_inputs: int = Field(4, ge=1)
    # temperature samples per rollout input; 0: candidates only (text params with a finite
    # candidate set, e.g. on replay, are compared under each candidate instead)
    rollout_n: int = Field(3, ge=0)
    text_candidates: int = Field(3, ge=1)
    text_steps: int = Field(3, ge=1)
    text_alternatives: int = Field(0, ge=0)
    min_alignment: float = Field(0.5, ge=0, le=1)
    # downstream completions per rollout candidate (m): its label is the mean reward of m runs
    # of everything downstream at temperature; 1: one greedy completion
    completions: int = Field(1, ge=1)
    # samples per rollout input of a param trained as a policy (weights: a policy samples
    # orders); None: rollout_n. Such samples need no LLM when the component's output feeds
    # none (a last-step decider), so replay allows them where it refuses LLM samples.
    policy_samples: int | None = Field(None, ge=0)
    # text demos drawn from the outputs that won stored rollout pairs as well as from the
    # search sample's outputs (loop rule 12); false: the search sample's only
    rollout_demos: bool = True
    # train inputs whose rollouts give stage 1's preference pairs (the first N of the train
    # split); None: all. Stage 1 is paid before the first validation: fewer inputs let the
    # loop act within a small budget, at the price of fewer pairs for the local rewards
    stage1_inputs: int | None = Field(None, ge=1)
    # upfront: stage 1 rolls out every component before the first step (the reference);
    # lazy: one component's rollouts are paid before each of the first steps, so validation
    # starts after the first component's (an anytime loop at small budgets)
    stage1: Literal["upfront", "lazy"] = "upfront"
    # equivalent runs for a global TPE search over the finite params on the validation set
    # before stage 1; the loop starts from its best config (``_warm``). 0: none
    warm_start: float = Field(0, ge=0)
    # local: every step is a local step (Algorithm 1); portfolio: global proposals from a
    # score model of validation beside the local ones, an arm drawn per step by its record,
    # the gate that model's expected validation score, local rewards paid lazily (``_portfolio``)
    proposals: Literal["local", "portfolio"] = "portfolio"
    # exact: the last component's local reward is the task metric on its search inputs' own
    # train examples (no learned head, no stage-1 rollouts for it; ``_exact``); learned: a
    # head trained on rollout pairs, like every other component's
    terminal_reward: Literal["exact", "learned"] = "exact"
    # rollout sampling temperature, and tau of the exp(r / tau) samplers (choice, weights)
    temperature: float = Field(1.0, gt=0)
    tau: float = Field(1.0, gt=0)
    # a component's stage-1 alignment decides whether it is drawn (min_alignment) only once
    # measured on at least this many decisive pairs; fewer say nothing
    min_alignment_pairs: int = Field(10, ge=1)

    @field_validator("rollout_n", "policy_samples")
    @classmethod
    def _samples(cls, n: int | None) -> int | None:
        if n == 1:
            raise ConfigError("a rollout compares samples: use 0 (candidates only) or >= 2")
        return n


def budget_default(name: str) -> Any:
    """The run config's default for budget field ``name``."""
    return BudgetSpec.model_fields[name].default
