"""The Pareto beam search (``coalign.search``) offered as a ``Text`` local optimizer.

Quality is the mean local reward of the component's outputs on the search sample, cost the LLM
tokens it spends per input; both relative to the current instruction. Children come from the
loop's edit operators (``EditMutator``) or any ``coalign.search`` mutator. It returns the front,
best quality first (cheaper on ties), and the current instruction at quality 0: the loop proposes
the best front member the gate has not turned down when it beats the current instruction.

Token counts come from the step usage of fresh calls: run with a response cache that already
holds the answers and cached calls count zero tokens, so give this optimizer its own cold cache
or accept that cost then only separates prompts whose calls were new.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Sequence

from coalign.optimize._base import BaseLocalOptimizer, LocalView, Scored
from coalign.optimize._text import EDITS
from coalign.params import TextValue
from coalign.search import (
    BaseMutator,
    BeamSearch,
    ChildSlot,
    Evaluation,
    PromptSpec,
    Proposal,
    SearchState,
    SearchStore,
    compile_prompt,
    compute_pareto_front,
    parent_spec,
)


class EditMutator(BaseMutator):
    """One edit operator per child (no LLM); siblings get different operators."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(f"edit-mutator:{seed}")

    def propose(self, snapshot: SearchState, slots: Sequence[ChildSlot]) -> list[Proposal]:
        out = []
        ops = self.rng.sample(range(len(EDITS)), k=min(len(slots), len(EDITS)))
        for slot, op in zip(slots, ops, strict=False):
            spec = parent_spec(snapshot, slot.parent)
            child = PromptSpec(EDITS[op](spec.objective), spec.categories, spec.decision_logic,
                               spec.examples, spec.output_format)
            out.append(Proposal(slot.parent, child, compile_prompt(child),
                                rationale={"edit": op}))
        return out


def instruction_of(prompt: str) -> str:
    """A compiled prompt with only an objective section is just that objective's text."""
    head = "## Objective\n"
    if prompt.startswith(head) and "\n## " not in prompt[len(head):]:
        return prompt[len(head):]
    return prompt


class _LocalEvaluator:
    def __init__(self, ctx: LocalView, demos: tuple[dict[str, str], ...]) -> None:
        self.ctx, self.demos = ctx, demos

    def evaluate(self, prompt: str) -> Evaluation:
        value = TextValue(instruction_of(prompt), self.demos)
        return Evaluation(self.ctx.mean_reward(value), self.ctx.mean_tokens(value))


class ParetoTextOptimizer(BaseLocalOptimizer):
    def __init__(self, budget: int = 9, beam_width: int = 3, max_rounds: int = 3,
                 mutator: BaseMutator | None = None) -> None:
        self.budget, self.beam_width, self.max_rounds = budget, beam_width, max_rounds
        self.mutator = mutator
        self.last_state: SearchState | None = None

    def propose(self, ctx: LocalView) -> list[Scored]:
        current: TextValue = ctx.current
        state = SearchState(run_id=f"{ctx.component}.{ctx.param}", seed=ctx.rng.randrange(2**31),
                            evaluation_budget=self.budget, max_rounds=self.max_rounds,
                            stagnation_limit=1, convergence_limit=2,
                            base_spec=PromptSpec(current.instruction).to_dict())
        state.algorithm_state.beam_width = self.beam_width
        with tempfile.TemporaryDirectory(prefix="coalign-pareto-") as folder:
            search = BeamSearch(state, _LocalEvaluator(ctx, current.demos),
                                self.mutator or EditMutator(state.seed), SearchStore(folder))
            self.last_state = search.run()
        scored = [c for c in self.last_state.candidates.values() if c.scored]
        value = {c.prompt_version: TextValue(instruction_of(c.prompt), current.demos)
                 for c in scored}
        # a dominated prompt is never proposed, even when the front members above it were
        # rejected; a stable sort keeps the front's order on ties, as max() did
        front = sorted(compute_pareto_front(scored), key=lambda c: (-c.quality_score, c.cost))
        return [Scored(current, 0.0),  # quality is relative to the current instruction
                *(Scored(value[c.prompt_version], c.quality_score) for c in front)]
