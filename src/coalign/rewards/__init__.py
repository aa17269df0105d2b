"""Local reward functions (LRFs): shared backbone, per-component heads, alignment evaluation."""

from coalign.errors import need_torch as _need_torch

_need_torch("the local reward models")  # torch modules; an evaluate-only install may lack it

from coalign.rewards._backbone import (
    Backbone,
    CachedBackbone,
    HashingBackbone,
    MiniLMBackbone,
    minilm_path,
)
from coalign.rewards._backbones import BACKBONES, make_backbone
from coalign.rewards._base import BaseRewardModel, PairRanker, RandomReward, RewardModel
from coalign.rewards._cache import EmbeddingCache
from coalign.rewards._checks import Check, Evidence
from coalign.rewards._eval import AlignmentResult, data_efficiency, pairwise_accuracy, subsample
from coalign.rewards._features import FEATURE_NAMES, N_FEATURES, features
from coalign.rewards._finetune import FinetuneConfig, finetune_backbone
from coalign.rewards._heads import TrainConfig
from coalign.rewards._heuristic import HeuristicReward, query_overlap_reward, shorter_output_reward
from coalign.rewards._io import load_reward_model, save_reward_model
from coalign.rewards._judge import LLMJudgeRanker, parse_choice
from coalign.rewards._loss import pairwise_loss, pairwise_loss_value, preference_probability
from coalign.rewards._model import FitReport, LocalRewardModel
from coalign.rewards._render import RenderBudget, render, render_sections
from coalign.rewards._replay import ReplayBuffer
from coalign.rewards._similarity import EmbeddingSimilarityRanker
from coalign.rewards._text import values_text
from coalign.rewards._threads import single_thread

__all__ = ["AlignmentResult", "BACKBONES", "Backbone", "BaseRewardModel", "CachedBackbone",
           "Check", "EmbeddingCache", "EmbeddingSimilarityRanker", "Evidence", "FEATURE_NAMES",
           "FinetuneConfig",
           "FitReport", "HashingBackbone", "HeuristicReward", "LLMJudgeRanker", "LocalRewardModel",
           "MiniLMBackbone", "N_FEATURES", "PairRanker", "RandomReward", "RenderBudget",
           "ReplayBuffer", "RewardModel", "TrainConfig", "data_efficiency", "features",
           "finetune_backbone", "load_reward_model", "make_backbone", "minilm_path",
           "pairwise_accuracy", "pairwise_loss", "pairwise_loss_value", "parse_choice",
           "preference_probability", "query_overlap_reward", "render", "render_sections",
           "save_reward_model", "shorter_output_reward", "single_thread", "subsample",
           "values_text"]
