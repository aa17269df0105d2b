"""``GroundedAnswer``: a gold-free check that a short QA answer is a span of what was retrieved.

HotpotQA's answers are names and phrases taken from its paragraphs, or yes/no for comparison
questions. An answer whose words are not all in the passages the system retrieved was made up
(or is a refusal such as "not mentioned"); one made only of the question's own words restates
an entity the question names instead of the one it asks for, unless the question offers
alternatives ("X or Y?"). On the three HotpotQA replay tables answers that pass score 0.39 to
0.44 answer F1 and those that fail 0.17 to 0.20 (benchmarks/RESULTS.md): far from the code
check's precision, enough for a per-input cascade (``coalign.cascade``) to gain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coalign.component import passage_text
from coalign.data import normalize_answer

# function words an answer may hold that no passage needs to: they decide nothing
_FILLER = frozenset("of in on at to for and or is was by with from as".split())
_YES_NO = (("yes",), ("no",))


def _words(text: str) -> tuple[str, ...]:
    return tuple(w for w in normalize_answer(text).split() if w not in _FILLER)


class GroundedAnswer:
    """A gold-free check (``coalign.rewards.Check``): 1.0 when the answer in output ``field``
    is yes/no, or at most ``most_words`` words all found in ``source`` (a text or a list of
    passages) and not only the question's own words; else 0.0.

    ``source`` is read from the item's inputs; ``None`` where it is absent. On the multihop
    system it is the retrieved ``passages``, which the answer generator does not see: the
    local reward's items (its inputs, its output) leave it ``None`` and unweighed, and a
    cascade, whose check reads the whole trace, applies it.
    """

    def __init__(self, field: str = "answer", source: str = "passages",
                 question: str = "question", most_words: int = 6) -> None:
        self.field, self.source, self.question = field, source, question
        self.most_words = most_words
        self.name = f"grounded_answer:{field}<-{source}"

    def __call__(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> float | None:
        answer, source = outputs.get(self.field), inputs.get(self.source)
        if answer is None or source is None:
            return None
        words = _words(str(answer))
        if words in _YES_NO:
            return 1.0
        if not words or len(words) > self.most_words:
            return 0.0
        texts = [source] if isinstance(source, str) else [passage_text(p) for p in source]
        known = {w for t in texts for w in _words(t)}
        question = str(inputs.get(self.question) or "")
        asked = set(_words(question))
        echo = all(w in asked for w in words) and " or " not in question.lower()
        return 1.0 if all(w in known for w in words) and not echo else 0.0
