"""The optimization loop, local optimizers per parameter kind, the gate and the cost ledger."""

from coalign.optimize._base import (
    BaseLocalOptimizer,
    LocalContext,
    LocalView,
    NoopOptimizer,
    Scored,
)
from coalign.optimize._budget import BudgetSpec
from coalign.optimize._choice import ExpChoiceOptimizer, RewardSelector, softmax
from coalign.optimize._costs import choice_costs
from coalign.optimize._gate import Gate, paired_bootstrap
from coalign.optimize._kinds import KINDS, ParamKind, RolloutAsk, optimizer_problem
from coalign.optimize._ledger import Ledger, planned_runs, prefix_discount
from coalign.optimize._local import LEGACY, legacy_conflict
from coalign.optimize._loop import Optimizer, StepRecord
from coalign.optimize._outcome import Outcome, StepState
from coalign.optimize._pareto import EditMutator, ParetoTextOptimizer
from coalign.optimize._reinforce import ReinforceResult, RunningBaseline, reinforce_search
from coalign.optimize._settings import LoopSettings
from coalign.optimize._text import TextOptimizer
from coalign.optimize._weights import ReinforceWeightsOptimizer, WeightsValue

__all__ = ["KINDS", "LEGACY", "BaseLocalOptimizer", "BudgetSpec", "EditMutator",
           "ExpChoiceOptimizer", "Gate", "Ledger", "LocalContext", "LocalView", "LoopSettings",
           "NoopOptimizer", "Optimizer", "Outcome", "ParamKind", "ParetoTextOptimizer",
           "ReinforceResult", "ReinforceWeightsOptimizer", "RewardSelector", "RolloutAsk",
           "RunningBaseline", "Scored", "StepRecord", "StepState", "TextOptimizer",
           "WeightsValue", "choice_costs", "legacy_conflict", "optimizer_problem",
           "paired_bootstrap", "planned_runs", "prefix_discount", "reinforce_search", "softmax"]
