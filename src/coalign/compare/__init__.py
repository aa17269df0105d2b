"""Optimizers compared on replay tables over many seeds at matched budgets: the reward matrix
as methods see it (``Lookup``), the global-config methods, coalign's loop as a method, paired
statistics over seeds and anytime curves (docs/tables.md)."""

from coalign.compare._comparison import (
    CEILINGS,
    EXHAUSTIVE,
    METHODS,
    REFERENCES,
    START,
    Comparison,
    anytime_svg,
    best_baseline,
    compare,
    front_svg,
)
from coalign.compare._decider_grid import decider_grid
from coalign.compare._lookup import (
    Lookup,
    Method,
    Split,
    Trajectory,
    draw_split,
    per_input_oracle,
    split_sizes,
)
from coalign.compare._loop_arm import LoopMethod, coalign_method
from coalign.compare._methods import exhaustive, random_search, reinforce, tpe
from coalign.compare._mipro import MiproMethod, mipro_method
from coalign.compare._model_methods import (
    MODEL_METHODS,
    FrontPoint,
    always_cheapest,
    always_strongest,
    front,
    llm_selector,
    model_slots,
    nsga2,
)
from coalign.compare._weights_reinforce import REINFORCE_WEIGHTS, WeightsReinforce
from coalign.compare._weights_search import (
    CMAES_WEIGHTS,
    CMAES_WEIGHTS_ONLY,
    TPE_WEIGHTS,
    WeightsSearch,
    weights_methods,
)

__all__ = ["CEILINGS", "CMAES_WEIGHTS", "CMAES_WEIGHTS_ONLY", "EXHAUSTIVE", "METHODS",
           "MODEL_METHODS", "REFERENCES", "REINFORCE_WEIGHTS", "START", "TPE_WEIGHTS",
           "WeightsReinforce", "WeightsSearch", "decider_grid",
           "weights_methods",
           "Comparison", "FrontPoint", "Lookup", "LoopMethod", "Method", "MiproMethod", "Split",
           "Trajectory",
           "always_cheapest", "always_strongest", "anytime_svg", "best_baseline", "coalign_method",
           "compare",
           "draw_split", "exhaustive", "front", "front_svg", "llm_selector", "mipro_method",
           "model_slots", "nsga2",
           "per_input_oracle", "random_search", "reinforce", "split_sizes", "tpe"]
