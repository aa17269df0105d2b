"""LLM-judge baseline: a local LLM shown k solved example pairs picks the better output.

This is the untrained signal the reference compares LRFs against: the judge sees the component's
description, its input and both outputs, plus k in-context pairs labeled by their measured rewards,
and answers "A" or "B". Nothing ties its opinion to the downstream metric.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from coalign.lm import LM, chat
from coalign.pairs import PreferencePair
from coalign.rewards._render import RenderBudget, render_sections

_SYSTEM = (
    "You compare two outputs of one step of an AI pipeline and say which leads to a better final "
    "result. Reply with one letter: A or B."
)
JUDGE_BUDGET = RenderBudget(description=100, output=200, query=200, evidence=300, max_passages=3)

_IS_BETTER = re.compile(r"\b([AB])\b[\"')*\]]*\s+(?:is|was)\s+(?:better|preferred|the better)")
_EXPLICIT = re.compile(
    r"\b(?i:better|answer|choice|choose|pick|winner|verdict|preferred|prefer|output|option|is)"
    r"\s*(?i:output|option|is|:|=|-)*\s*[\"'(*\[]*\s*([AB])\b"
)
_LEADING = re.compile(r"^\W*([AB])(?![A-Za-z])(?!\s+[a-z])")
_STANDALONE = re.compile(r"(?<![A-Za-z'])([AB])(?![A-Za-z'])")


def parse_choice(text: str) -> str | None:
    """ "A", "B", or None when the reply names neither, or both without saying which wins."""
    bare = re.sub(r"[^A-Za-z]", "", text)
    if bare.upper() in ("A", "B"):
        return bare.upper()
    for pattern in (_IS_BETTER, _EXPLICIT, _LEADING):
        m = pattern.search(text)
        if m:
            return m.group(1)
    letters = set(_STANDALONE.findall(text))
    if len(letters) == 1:
        return letters.pop()
    return None


class LLMJudgeRanker:
    """Pairwise judge with ``k`` in-context examples drawn from ``examples`` (same component).

    Args:
        lm: the language model backend.
        descriptions: component name -> one-line description.
        examples: labeled pairs to show in context (training pairs, never the test pair's input).
        k: in-context examples per question.
        seed: picks the examples and the A/B order shown, per test pair.
        both_orders: ask twice with A/B swapped and count only a consistent verdict (twice the
            LLM calls; removes position bias).
        max_tokens: reply length budget.
    """

    def __init__(
        self,
        lm: LM,
        descriptions: Mapping[str, str],
        examples: Sequence[PreferencePair] = (),
        k: int = 3,
        seed: int = 0,
        both_orders: bool = False,
        max_tokens: int = 4,
    ) -> None:
        self.lm = lm
        self.descriptions = dict(descriptions)
        self.examples = [p for p in examples if not p.is_tie]
        self.k = k
        self.seed = seed
        self.both_orders = both_orders
        self.max_tokens = max_tokens
        self.unparsed = 0  # replies naming no clear winner

    def _block(self, pair: PreferencePair, a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
        desc = self.descriptions.get(pair.component, pair.component)
        ctx = render_sections(desc, pair.inputs, {}, JUDGE_BUDGET)
        out_a = render_sections(desc, pair.inputs, a, JUDGE_BUDGET)["output"]
        out_b = render_sections(desc, pair.inputs, b, JUDGE_BUDGET)["output"]
        lines = [f"Step: {ctx['description']}", f"Input: {ctx['query']}"]
        if ctx["evidence"]:
            lines.append(f"Context: {ctx['evidence']}")
        lines += [f"A) {out_a}", f"B) {out_b}"]
        return "\n".join(lines)

    def prompt(self, pair: PreferencePair, swap: bool) -> str:
        rng = random.Random(f"{self.seed}:{pair.digest}")
        pool = [
            p
            for p in self.examples
            if p.component == pair.component and p.example_id != pair.example_id
        ]
        shots = rng.sample(pool, min(self.k, len(pool)))
        parts = []
        for i, shot in enumerate(shots, 1):
            flip = rng.random() < 0.5
            a, b = (shot.output_b, shot.output_a) if flip else (shot.output_a, shot.output_b)
            better = "A" if (shot.label == "a") != flip else "B"
            parts.append(f"Example {i}:\n{self._block(shot, a, b)}\nBetter: {better}")
        a, b = (pair.output_b, pair.output_a) if swap else (pair.output_a, pair.output_b)
        parts.append(f"Now decide:\n{self._block(pair, a, b)}\nBetter:")
        return "\n\n".join(parts)

    def _ask(self, pair: PreferencePair, swap: bool) -> int:
        request = chat(self.prompt(pair, swap), system=_SYSTEM, max_tokens=self.max_tokens)
        choice = parse_choice(self.lm.generate(request).text)
        if choice is None:
            self.unparsed += 1
            return 0
        vote = 1 if choice == "A" else -1
        return -vote if swap else vote

    def compare(self, pair: PreferencePair) -> float:
        if not self.both_orders:  # one order, seeded per pair: "always A" scores chance
            swap = random.Random(f"{self.seed}:order:{pair.digest}").random() < 0.5
            return float(self._ask(pair, swap=swap))
        first = self._ask(pair, swap=False)
        second = self._ask(pair, swap=True)
        return float(first) if first == second else 0.0
