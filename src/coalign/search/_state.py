"""Records of the beam search: candidates, per-round summaries and the persisted search state.

Scores are deltas, not raw metrics: ``quality_score`` and ``cost`` are signed fractions relative
to the baseline prompt (``base``), e.g. ``quality_score = 0.1`` means 10 % more accurate than the
baseline and ``cost = -0.2`` means 20 % fewer tokens. Quality is maximised, cost minimised.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from coalign.errors import ConfigError

ROOT_VERSION = "base"  # sentinel parent of every cold-start seed

EvalStatus = Literal["pending", "running", "complete", "failed"]
MutationMode = Literal["targeted", "exploratory"]
LoopPhase = Literal["review", "evaluate", "build"]

_VERSION_RE = re.compile(r"^v(\d+)$")


def version_number(version: str) -> int:
    """The N of ``vN``; -1 for anything else (``base``)."""
    m = _VERSION_RE.match(version)
    return int(m.group(1)) if m else -1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Candidate(_Model):
    """One prompt in the search tree (a DAG once two-parent merges appear)."""

    prompt_version: str
    parent_version: str | None = ROOT_VERSION
    secondary_parent_version: str | None = None
    quality_score: float = 0.0
    cost: float = 0.0
    round_introduced: int = 1
    example_ids: list[str] = Field(default_factory=list)
    eval_status: EvalStatus | None = "pending"
    prompt: str = ""  # the compiled prompt text the evaluator runs
    spec: dict[str, Any] = Field(default_factory=dict)  # structured sections (see _prompt.py)
    rationale: dict[str, Any] = Field(default_factory=dict)  # reviewer's failure/hypothesis/plan
    metrics: dict[str, Any] = Field(default_factory=dict)  # raw metrics, e.g. accuracy, tokens
    error: str | None = None

    @property
    def scored(self) -> bool:
        return self.eval_status == "complete"


class Targets(_Model):
    """User targets on the two objectives; ``None`` means that target is not declared."""

    quality_min: float | None = None
    cost_max: float | None = None

    def declared(self) -> bool:
        return self.quality_min is not None or self.cost_max is not None

    def met_by(self, c: Candidate) -> bool:
        """True when ``c`` meets every declared target (False when none is declared)."""
        if not self.declared():
            return False
        ok_q = self.quality_min is None or c.quality_score >= self.quality_min
        ok_c = self.cost_max is None or c.cost <= self.cost_max
        return ok_q and ok_c


class AlgorithmState(_Model):
    """Beam-specific knobs and the progress bookkeeping carried between rounds."""

    beam_width: int = Field(default=3, ge=1)
    epsilon_min: float = Field(default=0.0005, ge=0.0)
    backtrack_threshold: int = Field(default=2, ge=1)
    hypervolume: float = 0.0
    hypervolume_prev: float = 0.0
    reference_point: tuple[float, float] | None = None
    epsilon_tightened: bool = False
    last_parents: list[str] = Field(default_factory=list)  # parents expanded last round


class RoundSummary(_Model):
    round: int
    candidates_evaluated: list[str]  # versions evaluated this round (complete or failed)
    elite: list[str]
    hypervolume: float
    hypervolume_prev_same_ref: float  # the previous elite re-measured against this round's ref
    relative_improvement: float | None  # None: no previous front to compare with
    progress: bool
    reference_point: tuple[float, float]
    stagnation_count: int
    epsilon: float
    epsilon_tightened_now: bool
    backtracking: bool
    mutation_mode: MutationMode
    target_met: bool  # every declared target is met by some elite member
    single_candidate_meets_all: bool
    front_quality_spread: float
    converged: bool
    convergence_reason: str | None = None


class SearchState(_Model):
    """Everything needed to resume a search; written to ``search_state.json`` after each change."""

    schema_version: int = 1
    run_id: str = "search"
    fingerprint: str = ""  # digest of the task configuration; resume refuses on mismatch
    seed: int = 0
    algorithm: Literal["beam"] = "beam"
    algorithm_state: AlgorithmState = Field(default_factory=AlgorithmState)
    evaluation_budget: int = Field(default=60, ge=1)
    max_rounds: int = Field(default=50, ge=1)
    stagnation_limit: int = Field(default=3, ge=1)
    convergence_limit: int = Field(default=5, ge=1)
    epsilon: float = Field(default=0.001, ge=0.0)
    mutation_mode: MutationMode = "targeted"
    targets: Targets = Field(default_factory=Targets)
    current_round: int = 1
    next_variant_seq: int = 1
    stagnation_count: int = 0
    loop_phase: LoopPhase = "review"
    baseline: dict[str, Any] = Field(default_factory=dict)  # raw metrics of the base prompt
    base_spec: dict[str, Any] = Field(default_factory=dict)
    candidates: dict[str, Candidate] = Field(default_factory=dict)
    elite: list[str] = Field(default_factory=list)
    pending: list[str] = Field(default_factory=list)
    round_history: list[RoundSummary] = Field(default_factory=list)
    converged: bool = False
    convergence_reason: str | None = None

    @model_validator(mode="after")
    def _limits_ordered(self) -> SearchState:
        if self.convergence_limit <= self.stagnation_limit:
            raise ConfigError(
                f"convergence_limit ({self.convergence_limit}) must be greater than "
                f"stagnation_limit ({self.stagnation_limit})"
            )
        if self.algorithm_state.epsilon_min > self.epsilon:
            raise ConfigError(
                f"epsilon_min ({self.algorithm_state.epsilon_min}) must not exceed "
                f"epsilon ({self.epsilon})"
            )
        return self

    def new_version(self) -> str:
        """Allocate the next ``vN``; numbers are never reused."""
        v = f"v{self.next_variant_seq}"
        self.next_variant_seq += 1
        return v

    def elite_candidates(self) -> list[Candidate]:
        return [self.candidates[v] for v in self.elite]

    def pending_candidates(self) -> list[Candidate]:
        return [self.candidates[v] for v in self.pending]

    def total_evaluated(self) -> int:
        return sum(len(r.candidates_evaluated) for r in self.round_history)
