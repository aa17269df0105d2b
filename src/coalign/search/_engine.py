"""The driver: baseline -> (propose -> register -> evaluate -> advance)* until converged.

Every state change is persisted before the next step, so a search killed at any point resumes
from ``search_state.json``: proposals already registered are not re-proposed, finished
evaluations are kept, and a candidate caught ``running`` is evaluated again (with a response
cache that repeats no model call).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from coalign.errors import StoreError
from coalign.search._mutation import Mutator
from coalign.search._persist import SearchStore
from coalign.search._prompt import PromptSpec, compile_prompt
from coalign.search._rounds import advance_round, plan_children
from coalign.search._state import Candidate, RoundSummary, SearchState


@dataclass(frozen=True)
class Evaluation:
    """Raw figures of one prompt on the dev examples.

    ``quality`` is higher-is-better (e.g. accuracy, or a mean local reward), ``cost`` is
    lower-is-better (e.g. tokens per example). ``metrics["per_example"]`` (a list of
    ``{id, gold, pred}``) feeds the reviewer's failure cells.
    """

    quality: float
    cost: float
    metrics: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Evaluator(Protocol):
    def evaluate(self, prompt: str) -> Evaluation: ...


class CandidateFailed(Exception):
    """Raised by an evaluator when one candidate cannot be scored (it is marked ``failed``).

    Any other exception aborts the search; the state on disk stays resumable.
    """


def signed_change(value: float, base: float) -> float:
    """Signed fraction relative to ``base``; the plain difference when ``base`` is 0."""
    return (value - base) / abs(base) if base != 0 else value - base


class BeamSearch:
    """Runs one search over a :class:`SearchStore`.

    Args:
        state: the search state (new or loaded).
        evaluator: scores a prompt text; any scorer (an LM task, a local reward) plugs in here.
        mutator: proposes children (default: :class:`~coalign.search.LLMReviewer`).
        store: where the state, archive and view live.
        log: receives one line per event (progress output).
    """

    def __init__(
        self,
        state: SearchState,
        evaluator: Evaluator,
        mutator: Mutator,
        store: SearchStore,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.state = state
        self.evaluator = evaluator
        self.mutator = mutator
        self.store = store
        self.log = log or (lambda _msg: None)

    @classmethod
    def open(
        cls,
        store: SearchStore,
        evaluator: Evaluator,
        mutator: Mutator,
        new_state: Callable[[], SearchState],
        log: Callable[[str], None] | None = None,
    ) -> BeamSearch:
        """Resume the search in ``store`` if there is one, else start ``new_state()``.

        Raises:
            StoreError: the stored search belongs to a different configuration.
        """
        fresh = new_state()
        if store.exists():
            state = store.load()
            if state.fingerprint != fresh.fingerprint:
                raise StoreError(
                    f"{store.state_path}: this search was started with a different "
                    "configuration; use another --out folder or the original settings"
                )
            for c in state.pending_candidates():
                if c.eval_status == "running":  # killed mid-evaluation: evaluate again
                    c.eval_status = "pending"
        else:
            state = fresh
            store.save(state)
        return cls(state, evaluator, mutator, store, log)

    def _save(self) -> None:
        self.store.save(self.state)

    def run(self) -> SearchState:
        """Run to convergence and return the final state."""
        if not self.state.baseline:
            self._evaluate_baseline()
        while not self.state.converged:
            self.step()
        return self.state

    def step(self) -> RoundSummary | None:
        """Advance one phase of the current round; returns the summary when a round closes."""
        st = self.state
        if st.loop_phase == "review":
            self._propose()
            return None
        if any(c.eval_status == "pending" for c in st.pending_candidates()):
            self._evaluate_next()
            return None
        return self._close_round()

    def _evaluate_baseline(self) -> None:
        prompt = compile_prompt(PromptSpec.from_dict(self.state.base_spec))
        ev = self.evaluator.evaluate(prompt)
        self.state.baseline = {"quality": ev.quality, "cost": ev.cost, **ev.metrics}
        self._save()
        self.log(f"baseline: quality={ev.quality:.4f} cost={ev.cost:.1f}")

    def _propose(self) -> None:
        st = self.state
        slots = plan_children(st)
        proposals = self.mutator.propose(st.model_copy(deep=True), slots)
        # a prompt already scored would score the same again: do not spend budget on it
        seen = {c.prompt for c in st.candidates.values()}
        seen.add(compile_prompt(PromptSpec.from_dict(st.base_spec)))
        for p in proposals:
            if p.prompt in seen:
                self.log(f"round {st.current_round}: dropped a duplicate child of {p.parent}")
                continue
            seen.add(p.prompt)
            v = st.new_version()
            st.candidates[v] = Candidate(
                prompt_version=v,
                parent_version=p.parent,
                secondary_parent_version=p.secondary_parent,
                round_introduced=st.current_round,
                example_ids=p.spec.example_ids,
                prompt=p.prompt,
                spec=p.spec.to_dict(),
                rationale=p.rationale,
            )
            st.pending.append(v)
        st.loop_phase = "evaluate"
        self._save()
        self.log(f"round {st.current_round}: proposed {', '.join(st.pending)}")

    def _evaluate_next(self) -> None:
        st = self.state
        c = next(c for c in st.pending_candidates() if c.eval_status == "pending")
        c.eval_status = "running"
        self._save()
        try:
            ev = self.evaluator.evaluate(c.prompt)
        except CandidateFailed as exc:
            c.eval_status, c.error = "failed", str(exc)[:500]
            self._save()
            self.log(f"  {c.prompt_version} failed: {exc}")
            return
        c.quality_score = signed_change(ev.quality, st.baseline["quality"])
        c.cost = signed_change(ev.cost, st.baseline["cost"])
        c.metrics = {"quality": ev.quality, "cost": ev.cost, **ev.metrics}
        c.eval_status = "complete"
        self._save()
        self.log(
            f"  {c.prompt_version} (parent {c.parent_version}): quality {c.quality_score:+.3f} "
            f"cost {c.cost:+.3f} [raw {ev.quality:.4f} / {ev.cost:.1f}]"
        )

    def _close_round(self) -> RoundSummary:
        st = self.state
        evaluated = st.pending_candidates()
        exit_signal = self.mutator.exit_signal(st.model_copy(deep=True))
        summary = advance_round(st, exit_signal=exit_signal)
        # archive first: re-closing after a kill here appends nothing twice (deduped by version)
        self.store.append_archive(evaluated, summary.round)
        self._save()
        rel = (
            "n/a"
            if summary.relative_improvement is None
            else f"{summary.relative_improvement:+.4f}"
        )
        self.log(
            f"round {summary.round} closed: elite {summary.elite} hv={summary.hypervolume:.5f} "
            f"rel={rel} stagnation={summary.stagnation_count} mode={summary.mutation_mode}"
            + (f" CONVERGED ({summary.convergence_reason})" if summary.converged else "")
        )
        return summary
