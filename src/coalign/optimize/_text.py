"""Local optimization of a ``Text`` param (instruction + demonstrations).

Each step proposes ``n_candidates`` from three sources, round-robin: a proposer LM shown the best
scored instructions so far (OPRO-style), demonstrations bootstrapped from the outputs the LRF
ranks highest (search outputs and rollout winners), and simple edit operators. Every candidate
is scored by the mean local reward of the component's outputs on the search sample; every scored
value is returned (the loop proposes the best one the gate has not turned down, if it beats the
current value).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from coalign.component import first_line, render_fields, render_value
from coalign.lm import chat
from coalign.optimize._base import BaseLocalOptimizer, LocalView, Scored
from coalign.params import Text, TextValue

EDITS: tuple[Callable[[str], str], ...] = (
    lambda s: s + " Reply with only the answer, no explanation.",
    lambda s: s + " Be concise.",
    lambda s: s + " Copy names and numbers exactly as they appear in the input.",
    lambda s: ". ".join(s.split(". ")[:-1]) + "." if ". " in s else s + " Think of what is asked.",
    lambda s: "Read the input carefully. " + s,
    lambda s: s + " Use only information stated in the input; never guess.",
    lambda s: s + " Keep every name from the input exactly as written.",
    # multi-part questions: small models answer the first hop and stop
    lambda s: s + " If the question has several parts, give the fact for each part.",
    lambda s: s + " When the answer concerns someone or something named in the input, also give "
                  "the fact stated about that one.",
)

# Small proposers copy the example's names into the instruction, which then fits one input only:
# the prompt asks for a general instruction explicitly.
META = ("You improve the instruction given to an assistant that performs one step of a "
        "pipeline: it {description}.\nExample of the step's input:\n{example}\nIts output "
        "under the best instruction: {output}\nInstructions tried so far, with their scores "
        "(higher is better):\n{tried}\nWrite one new, different instruction that should score "
        "higher on every input of this step. Keep it general: do not mention names or facts "
        "from the example. Reply with the instruction only.")


SCORE_TAIL = re.compile(r"\s*\(score\s*[-+]?[\d.]+\)\s*$", re.IGNORECASE)


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4}


META_WORDS = _content_words(META)  # the meta prompt is fixed: its words once


def clean_proposal(text: str, example: str, current: str = "", n: int = 6,
                   max_shared: int = 3) -> str | None:
    """The proposer's instruction, or ``None`` when it is not one. Small proposers copy the meta
    prompt's own sentences or the example's content (a training question is no instruction and
    fits one input only), paraphrase the example's question, echo an output ("{'answer': …}"),
    and echo the "(score …)" of the list they were shown. A paraphrase shares no six words in a
    row with the example, so more than ``max_shared`` content words taken from the example (and
    not from the meta prompt or the ``current`` instruction) also count as copying."""
    text = SCORE_TAIL.sub("", text.strip()).strip().strip('"').strip()
    if len(text) <= 10 or text.endswith("?") or text.startswith("{"):
        return None
    if _ngrams(text, n) & (_ngrams(META, n) | _ngrams(example, n)):
        return None
    shared = _content_words(text) & _content_words(example)
    if len(shared - META_WORDS - _content_words(current)) > max_shared:
        return None
    return text


class TextOptimizer(BaseLocalOptimizer):
    def __init__(self, n_candidates: int = 3, steps: int = 3, n_demos: int = 2,
                 max_demo_chars: int = 400) -> None:
        self.n_candidates = n_candidates
        self.steps = steps
        self.n_demos = n_demos
        self.max_demo_chars = max_demo_chars

    def propose(self, ctx: LocalView) -> list[Scored]:
        spec = ctx.task.system.component(ctx.component).params[ctx.param]
        pool: dict[str, tuple[TextValue, float]] = {}

        def score(value: TextValue) -> None:
            key = repr(value)
            if key not in pool:
                pool[key] = (value, ctx.mean_reward(value))

        score(ctx.current)
        if isinstance(spec, Text) and spec.candidates:  # a finite space: rank all of it
            for value in spec.candidates:
                score(value)
            return [Scored(v, r) for v, r in pool.values()]
        # without a proposer LM its turns go to the other sources instead of being wasted
        sources = ([self._from_proposer] if ctx.proposer else []) + [self._from_edit,
                                                                     self._from_demos]
        turn = 0
        for _ in range(self.steps):
            for _ in range(self.n_candidates):
                best = max(pool.values(), key=lambda vs: vs[1])[0]
                candidate = sources[turn % len(sources)](ctx, best, pool)
                turn += 1
                if candidate is not None and isinstance(spec, Text):
                    score(spec.validate(candidate))
        return [Scored(v, r) for v, r in pool.values()]

    def _from_proposer(self, ctx: LocalView, best: TextValue,
                       pool: dict[str, tuple[TextValue, float]]) -> TextValue | None:
        if ctx.proposer is None:
            return None
        ranked = sorted(pool.values(), key=lambda vs: vs[1])[-5:]
        tried = "\n".join(f"- {v.instruction} (score {s:.3f})" for v, s in ranked)
        items = ctx.outputs_under(best)
        example, output = (render_fields(items[0][0], 600), render_value(items[0][1], 200)) \
            if items else ("(none)", "(none)")
        description = ctx.task.system.component(ctx.component).description
        prompt = META.format(description=description, example=example, output=output,
                             tried=tried)
        # a fresh draw per step: a fixed index would re-propose the instruction the gate rejected
        request = chat(prompt, max_tokens=80, temperature=0.9,
                       sample_index=ctx.rng.randrange(1 << 30))
        text = clean_proposal(first_line(ctx.runtime.lm(ctx.proposer).generate(request).text,
                                         ("instruction:", "new instruction:")), example,
                              ctx.current.instruction)
        return TextValue(text, best.demos) if text else None

    def _from_edit(self, ctx: LocalView, best: TextValue,
                   pool: dict[str, tuple[TextValue, float]]) -> TextValue | None:
        # without replacement: an edit already scored from this instruction would only re-score it
        for i in ctx.rng.sample(range(len(EDITS)), len(EDITS)):
            value = TextValue(EDITS[i](best.instruction), best.demos)
            if repr(value) not in pool:
                return value
        return None

    def alternatives(self, current: Any, rng: random.Random, k: int) -> tuple[Any, ...]:
        """``k`` distinct edits of the current instruction, for stage-1 rollouts: outputs of
        different instructions on the same input teach the local reward what the edits change."""
        if not isinstance(current, TextValue) or k < 1:
            return ()
        edited = {repr(v): v for v in (TextValue(e(current.instruction), current.demos)
                                       for e in EDITS)}  # demos are dicts: key by repr
        edited.pop(repr(current), None)
        return tuple(rng.sample(list(edited.values()), min(k, len(edited))))

    def _from_demos(self, ctx: LocalView, best: TextValue,
                    pool: dict[str, tuple[TextValue, float]]) -> TextValue | None:
        # the search outputs under `best` plus the outputs that won their rollout pairs: the
        # latter are many more inputs to bootstrap from, at no LLM cost
        items = [*ctx.outputs_under(best), *ctx.rollout_winners]
        if not items:
            return None
        scores = ctx.reward.score_batch(ctx.component, items)
        ranked = [items[i] for i in sorted(range(len(items)), key=lambda i: -float(scores[i]))]
        # the best-ranked demos, then the best with distinct outputs: demos that all show one
        # answer ("yes", "yes") pull a small model towards it whatever the input, which helps
        # only where that answer is the common one; the local reward ranks the two sets
        for distinct in (False, True):
            value = TextValue(best.instruction, self._pick_demos(ranked, distinct))
            if repr(value) not in pool:
                return value
        return None

    def _pick_demos(self, ranked: list[tuple[dict, dict]], distinct: bool) -> tuple[dict, ...]:
        demos: dict[str, dict[str, str]] = {}  # one demo per input
        outputs: set[str] = set()
        for only_new_outputs in (True, False) if distinct else (False,):
            for x, y in ranked:
                shown = {k: render_value(v, self.max_demo_chars) for k, v in x.items()}
                out = {k: str(v) for k, v in y.items()}
                key, out_key = repr(sorted(shown.items())), repr(sorted(out.items()))
                if len(demos) == self.n_demos or key in demos or (
                        only_new_outputs and out_key in outputs):
                    continue
                demos[key] = {**shown, **out}
                outputs.add(out_key)
        return tuple(demos.values())


def rollout_winners(store: Any, component: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Per train input, the best output of ``component`` that won a stored rollout pair: a pool
    of demonstrations (choice-keyed outputs name an option, not an output, and are skipped)."""
    best: dict[str, tuple[float, dict[str, Any], dict[str, Any]]] = {}
    for p in store.pairs(component):
        if p.is_tie or any(k.startswith("@") for k in p.chosen):
            continue
        reward = max(p.reward_a, p.reward_b)
        if p.example_id not in best or reward > best[p.example_id][0]:
            best[p.example_id] = (reward, dict(p.inputs), dict(p.chosen))
    return [(x, y) for _, x, y in best.values()]
