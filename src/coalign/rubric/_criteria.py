"""Warm-up rubric targets derived from the trajectories themselves (no teacher is available).

ARCO's warm-up has a closed teacher write criteria and scores. Offline, we derive them:

1. **Criteria text.** Each step gets the first K applicable entries of a fixed, phase-specific
   checklist (first search / later search / answer), instantiated with the step's own query,
   passage title or answer, e.g. ``the passage Alan Turing was not retrieved before``.
2. **Verdicts.** Each criterion is checked mechanically on text the agent could see
   (question, queries, passages, answer), never on gold labels: +1 satisfied, -1 not.
3. **Decomposition projection.** Raw step scores (mean verdict) rarely sum to the outcome R.
   The step-score targets are their Euclidean projection onto ``{s in [-1,1]^T : sum s = R}``:
   ``s_t = clip(raw_t + lam, -1, 1)`` with ``lam`` found by bisection. The dimension targets
   are projected the same way onto ``mean_k d_tk = s_t``. So the rubric model starts out
   satisfying the constraint it is later trained on, with the checklist deciding *where* the
   credit goes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from coalign.data import normalize_answer
from coalign.errors import ConfigError
from coalign.retrieval import tokenize
from coalign.rubric._env import Step, Trajectory, extract_spans

__all__ = [
    "FIXED_CRITERIA",
    "Criterion",
    "derive_criteria",
    "mentions",
    "project_to_sum",
    "warmup_targets",
]

# Dataset-level criteria for the "w/o adaptive" ablation: the same text for every step.
FIXED_CRITERIA = (
    "the step brings new evidence for the question",
    "the step builds on the question and the evidence so far",
    "the step moves toward a supported answer",
    "the step avoids repeating earlier work",
    "the step is specific rather than generic",
)


@dataclass(frozen=True)
class Criterion:
    """A natural-language criterion and its mechanical verdict (+1 met, -1 not met)."""

    text: str
    verdict: float


def mentions(haystack: str, needle: str) -> bool:
    """Whether ``needle`` occurs in ``haystack`` as whole words, after answer normalization."""
    n = normalize_answer(needle)
    return bool(n) and f" {n} " in f" {normalize_answer(haystack)} "


def _title(step: Step) -> str:
    return step.observation.split(":", 1)[0]


def _sign(ok: bool) -> float:
    return 1.0 if ok else -1.0


def _type_fits(question: str, answer: str) -> tuple[str, bool]:
    q = question.lower()
    if q.split()[:1] and q.split()[0] in {"is", "are", "was", "were", "do", "does", "did"}:
        return "yes or no", normalize_answer(answer) in {"yes", "no"}
    if "how many" in q or "what year" in q or "which year" in q or q.startswith("when"):
        return "a number or date", any(ch.isdigit() for ch in answer)
    if q.startswith(("who", "whom", "whose")) or " who " in q:
        return "a name", answer[:1].isupper()
    return "an entity", answer[:1].isupper() or any(ch.isdigit() for ch in answer)


CheckFn = Callable[[Trajectory, Step, list[Step]], Criterion | None]


def _lead_or_restate(traj: Trajectory, step: Step, before: list[Step]) -> Criterion:
    query = step.action.text
    if not before:
        return Criterion(f"the query {query} is taken from the question",
                         _sign(mentions(traj.question, query)))
    earlier = " ".join(s.observation for s in before)
    lead = mentions(earlier, query) and not mentions(traj.question, query)
    return Criterion(f"the query {query} follows a lead from an earlier passage", _sign(lead))


def _new_passage(traj: Trajectory, step: Step, before: list[Step]) -> Criterion:
    new = step.passage not in {s.passage for s in before}
    return Criterion(f"the passage {_title(step)} was not retrieved before", _sign(new))


def _question_terms(traj: Trajectory, step: Step, before: list[Step]) -> Criterion:
    shared = set(tokenize(traj.question)) & set(tokenize(step.observation))
    return Criterion(f"the passage {_title(step)} shares terms with the question",
                     _sign(len(shared) >= 2))


def _links(traj: Trajectory, step: Step, before: list[Step]) -> Criterion:
    title = _title(step)
    if not before:
        names = [s for s in extract_spans(traj.question) if mentions(step.observation, s)]
        return Criterion(f"the passage {title} names an entity of the question", _sign(bool(names)))
    earlier = " ".join(s.observation for s in before)
    linked = any(mentions(step.observation, s) for s in extract_spans(earlier)
                 if not mentions(traj.question, s))
    return Criterion(f"the passage {title} connects to earlier evidence", _sign(linked))


def _fresh_query(traj: Trajectory, step: Step, before: list[Step]) -> Criterion:
    repeat = step.action.text in {s.action.text for s in before}
    return Criterion(f"the query {step.action.text} was not tried before", _sign(not repeat))


def _in_evidence(traj: Trajectory, step: Step, before: list[Step]) -> Criterion:
    seen = " ".join(s.observation for s in before)
    a = step.action.text
    return Criterion(f"the answer {a} appears in a retrieved passage", _sign(mentions(seen, a)))


def _fits_type(traj: Trajectory, step: Step, before: list[Step]) -> Criterion:
    kind, ok = _type_fits(traj.question, step.action.text)
    return Criterion(f"the answer {step.action.text} is {kind} as the question asks", _sign(ok))


def _not_echo(traj: Trajectory, step: Step, before: list[Step]) -> Criterion:
    a, q = step.action.text, traj.question
    allowed = " or " in q or normalize_answer(a) in {"yes", "no"}
    return Criterion(f"the answer {a} adds more than the question's words",
                     _sign(allowed or not mentions(q, a)))


def _two_passages(traj: Trajectory, step: Step, before: list[Step]) -> Criterion:
    n = len({s.passage for s in before if s.passage is not None})
    return Criterion("two distinct passages were gathered before answering", _sign(n >= 2))


def _in_last(traj: Trajectory, step: Step, before: list[Step]) -> Criterion:
    last = before[-1].observation if before else ""
    a = step.action.text
    return Criterion(f"the answer {a} appears in the last retrieved passage",
                     _sign(mentions(last, a)))


_SEARCH_CHECKS: tuple[CheckFn, ...] = (
    _lead_or_restate, _new_passage, _links, _question_terms, _fresh_query,
)
_ANSWER_CHECKS: tuple[CheckFn, ...] = (
    _in_evidence, _fits_type, _not_echo, _two_passages, _in_last,
)
MAX_K = 5


def derive_criteria(traj: Trajectory, position: int, k: int) -> list[Criterion]:
    """The first ``k`` (<= 5) checklist criteria for step ``position`` of ``traj``."""
    if not 1 <= k <= MAX_K:
        raise ConfigError(f"k must be in 1..{MAX_K} (got {k})")
    step, before = traj.steps[position], traj.steps[:position]
    checks = _ANSWER_CHECKS if step.action.kind == "answer" else _SEARCH_CHECKS
    out = [c for c in (check(traj, step, before) for check in checks) if c is not None]
    return out[:k]


def project_to_sum(values: Sequence[float], total: float, lo: float = -1.0,
                   hi: float = 1.0, iters: int = 60) -> list[float]:
    """Euclidean projection of ``values`` onto ``{x in [lo,hi]^n : sum x = total}``.

    The solution is ``clip(v + lam)`` for the scalar ``lam`` that meets the sum (bisection;
    the sum is monotone in ``lam``). ``total`` is clipped into the feasible range first.
    """
    n = len(values)
    if n == 0:
        return []
    total = min(max(total, n * lo), n * hi)
    low, high = lo - max(values), hi - min(values)
    for _ in range(iters):
        lam = (low + high) / 2
        s = sum(min(max(v + lam, lo), hi) for v in values)
        low, high = (lam, high) if s < total else (low, lam)
    lam = (low + high) / 2
    return [min(max(v + lam, lo), hi) for v in values]


@dataclass(frozen=True)
class StepTarget:
    """Warm-up targets for one step: criteria texts, dimension scores, step score."""

    criteria: tuple[str, ...]
    dims: tuple[float, ...]
    score: float


def warmup_targets(traj: Trajectory, k: int, mode: str = "adaptive") -> list[StepTarget]:
    """Derived criteria and projected score targets for every step of ``traj``.

    ``mode``: ``adaptive`` (per-step checklist text), ``fixed`` (``FIXED_CRITERIA[:k]``, every
    dimension targets the step score) or ``none`` (no criteria text, one scalar).
    """
    per_step = [derive_criteria(traj, t, min(k, MAX_K)) for t in range(len(traj.steps))]
    raw = [sum(c.verdict for c in cs) / len(cs) for cs in per_step]
    scores = project_to_sum(raw, traj.reward)
    out = []
    for cs, s in zip(per_step, scores, strict=True):
        if mode == "adaptive":
            dims = project_to_sum([c.verdict for c in cs], s * len(cs))
            out.append(StepTarget(tuple(c.text for c in cs), tuple(dims), s))
        elif mode == "fixed":
            out.append(StepTarget(FIXED_CRITERIA[:k], (s,) * k, s))
        elif mode == "none":
            out.append(StepTarget((), (s,), s))
        else:
            raise ConfigError(f"unknown criteria mode {mode!r}; use adaptive, fixed or none")
    return out
