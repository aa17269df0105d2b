"""ARCO: step-level rubric rewards that co-evolve with a multi-step search agent."""

from coalign.errors import need_torch as _need_torch

_need_torch("ARCO's policy and rubric models")

from coalign.rubric._ablations import Variant, variants
from coalign.rubric._advantages import (
    bucketed_advantages,
    outcome_step_rewards,
    position_bucket,
    reward_to_go,
)
from coalign.rubric._checkpoint import load_checkpoint, save_checkpoint
from coalign.rubric._coevolve import CoevolveConfig, co_evolve, frozen_copy
from coalign.rubric._criteria import (
    FIXED_CRITERIA,
    Criterion,
    StepTarget,
    derive_criteria,
    project_to_sum,
    warmup_targets,
)
from coalign.rubric._env import Action, Retriever, SearchEnv, Step, Trajectory, extract_spans
from coalign.rubric._evaluate import credit_pairs, decomposition_mse, exact_match_rate, roc_auc
from coalign.rubric._experiment import (
    ExperimentConfig,
    ExperimentResult,
    build_encoder,
    run_experiment,
)
from coalign.rubric._losses import categorical_kl, decomposition_loss, decomposition_sq_errors
from coalign.rubric._model import ArcoModel, BackboneConfig
from coalign.rubric._policy import Decision, Policy
from coalign.rubric._rubric import RubricModel, RubricOutput, RubricSpec, StepContext, StepRubric
from coalign.rubric._text import StepEncoder, Vocab
from coalign.rubric._warmup import (
    WarmupConfig,
    enumerate_successes,
    random_rollout,
    replay_decisions,
    warm_up,
)

__all__ = [
    "FIXED_CRITERIA",
    "Action",
    "ArcoModel",
    "BackboneConfig",
    "CoevolveConfig",
    "Criterion",
    "Decision",
    "ExperimentConfig",
    "ExperimentResult",
    "Policy",
    "Retriever",
    "RubricModel",
    "RubricOutput",
    "RubricSpec",
    "SearchEnv",
    "Step",
    "StepContext",
    "StepEncoder",
    "StepRubric",
    "StepTarget",
    "Trajectory",
    "Variant",
    "Vocab",
    "WarmupConfig",
    "build_encoder",
    "bucketed_advantages",
    "categorical_kl",
    "co_evolve",
    "credit_pairs",
    "decomposition_loss",
    "decomposition_mse",
    "decomposition_sq_errors",
    "derive_criteria",
    "enumerate_successes",
    "exact_match_rate",
    "extract_spans",
    "frozen_copy",
    "load_checkpoint",
    "outcome_step_rewards",
    "position_bucket",
    "project_to_sum",
    "random_rollout",
    "replay_decisions",
    "reward_to_go",
    "roc_auc",
    "run_experiment",
    "save_checkpoint",
    "variants",
    "warm_up",
    "warmup_targets",
]
