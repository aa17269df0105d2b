"""The optimization loop, local optimizers per parameter kind, the gate and the cost ledger."""

from coalign.budget import BudgetSpec
from coalign.optimize._base import (
    BaseLocalOptimizer,
    LocalContext,
    LocalView,
    NoopOptimizer,
    Scored,
    value_key,
)
from coalign.optimize._baselines import random_search
from coalign.optimize._choice import ExpChoiceOptimizer, RewardSelector, softmax
from coalign.optimize._costs import choice_costs
from coalign.optimize._gate import Gate, paired_bootstrap
from coalign.optimize._kinds import KINDS, ParamKind, RolloutAsk, optimizer_problem
from coalign.optimize._ledger import Ledger, checked_steps, planned_runs, prefix_discount
from coalign.optimize._local import LEGACY, legacy_conflict
from coalign.optimize._loop import Optimizer, StepRecord
from coalign.optimize._outcome import Outcome, StepState
from coalign.optimize._pareto import EditMutator, ParetoTextOptimizer
from coalign.optimize._reinforce import ReinforceResult, RunningBaseline, reinforce_search
from coalign.optimize._reinforce import _Categorical as Categorical
from coalign.optimize._selectors import (
    Policies,
    load_frozen,
    policies_of,
    policy_suffix,
    selector_dir,
)
from coalign.optimize._settings import LoopSettings
from coalign.optimize._text import EDITS, META, TextOptimizer, clean_proposal
from coalign.optimize._weights import ReinforceWeightsOptimizer, WeightsValue

_DSPY_EXPORTS = {"engine_response": "_dspy", "request_messages": "_dspy",
                 "dspy_optimize": "_dspy_optimize", "CoalignProgram": "_dspy",
                 "CoalignDSPyLM": "_dspy", "CoalignEngine": "_dspy", "EXAMPLE_ID": "_dspy",
                 "llm_components": "_dspy", "to_dspy_program": "_dspy",
                 "from_dspy_program": "_dspy"}


def __getattr__(name: str) -> object:
    # The DSPy engine needs the bench extra: load it only when asked for.
    if name in _DSPY_EXPORTS:
        import importlib

        return getattr(importlib.import_module(f"coalign.optimize.{_DSPY_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'coalign.optimize' has no attribute {name!r}")


__all__ = ["BaseLocalOptimizer", "BudgetSpec", "Categorical", "CoalignDSPyLM", "CoalignEngine",
           "CoalignProgram", "EDITS", "EXAMPLE_ID", "EditMutator",
           "ExpChoiceOptimizer", "Gate", "KINDS", "LEGACY", "Ledger", "LocalContext", "LocalView",
           "LoopSettings", "META", "NoopOptimizer", "Optimizer", "Outcome", "ParamKind",
           "ParetoTextOptimizer", "Policies", "ReinforceResult", "ReinforceWeightsOptimizer",
           "RewardSelector", "RolloutAsk", "RunningBaseline", "Scored", "StepRecord", "StepState",
           "TextOptimizer", "WeightsValue", "checked_steps", "choice_costs", "clean_proposal",
           "dspy_optimize", "engine_response", "from_dspy_program", "legacy_conflict",
           "llm_components", "load_frozen", "to_dspy_program",
           "optimizer_problem", "paired_bootstrap", "planned_runs", "policies_of", "policy_suffix",
           "prefix_discount", "random_search", "reinforce_search", "request_messages",
           "selector_dir", "softmax", "value_key"]
