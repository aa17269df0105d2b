"""Multi-objective beam search over prompt candidates (quality up, cost down).

See ``docs/search.md``. Pure selection/progress functions work on any objects with
``quality_score`` and ``cost`` attributes.
"""

from coalign.search._engine import (
    BeamSearch,
    CandidateFailed,
    Evaluation,
    Evaluator,
    signed_change,
)
from coalign.search._mutation import (
    BaseMutator,
    FailureCell,
    Mutator,
    Proposal,
    failure_cells,
    parent_spec,
)
from coalign.search._persist import SearchStore
from coalign.search._progress import compute_hypervolume, measure_progress, reference_point
from coalign.search._prompt import Demo, EditDirective, PromptSpec, apply_directives, compile_prompt
from coalign.search._pubmedqa import PubMedQATask, base_spec, load_sets
from coalign.search._reviewer import LLMReviewer, parse_review
from coalign.search._rounds import ChildSlot, advance_round, plan_children
from coalign.search._selection import (
    compute_pareto_front,
    crowding_distance,
    dominates,
    prune_to_size,
    update_elite_set,
)
from coalign.search._state import (
    ROOT_VERSION,
    AlgorithmState,
    Candidate,
    RoundSummary,
    SearchState,
    Targets,
)
from coalign.search._viz import render_viz, viz_data

__all__ = [
    "ROOT_VERSION",
    "AlgorithmState",
    "BaseMutator",
    "BeamSearch",
    "Candidate",
    "CandidateFailed",
    "ChildSlot",
    "Demo",
    "EditDirective",
    "Evaluation",
    "Evaluator",
    "FailureCell",
    "LLMReviewer",
    "Mutator",
    "PromptSpec",
    "PubMedQATask",
    "Proposal",
    "RoundSummary",
    "SearchState",
    "SearchStore",
    "Targets",
    "advance_round",
    "apply_directives",
    "base_spec",
    "compile_prompt",
    "compute_hypervolume",
    "compute_pareto_front",
    "crowding_distance",
    "dominates",
    "failure_cells",
    "load_sets",
    "measure_progress",
    "parent_spec",
    "parse_review",
    "plan_children",
    "prune_to_size",
    "reference_point",
    "render_viz",
    "signed_change",
    "update_elite_set",
    "viz_data",
]
