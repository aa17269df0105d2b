"""Word-level vocabulary and the token layouts the shared backbone reads.

Layouts (one sequence each, right-padded in batches; attention is causal, so real tokens never
see padding):

* policy:  ``<bos> <q> question (<obs> passage)* <act> action <eoa>``; the policy head reads
  ``<eoa>``.
* rubric:  ``<bos> <q> question (<act> a_i <res> o_i)* <now> <act> a_t <res> o_t <eoa>``
  then the criteria ``c_1 <eoc> c_2 <eoc> ... c_K <eoc>``; the generation head predicts the
  criteria tokens, the score head reads each ``<eoc>``. Without a prefix, the ``(a_i, o_i)``
  pairs are left out.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["SPECIALS", "Vocab", "tokenize_words"]

SPECIALS = ("<pad>", "<bos>", "<q>", "<obs>", "<act>", "<res>", "<now>", "<eoa>", "<eoc>")
_WORD = re.compile(r"\w+|[^\w\s]")


def tokenize_words(text: str) -> list[str]:
    """Lowercased words and single punctuation marks."""
    return _WORD.findall(text.lower())


class Vocab:
    """Words seen in the environment's text, plus hashed buckets for the rest.

    Args:
        words: the known words (specials and buckets are added in front).
        oov_buckets: unknown words map to one of this many ``<oov#>`` tokens by a stable hash,
            so two different unknown names rarely collide within one context.
    """

    def __init__(self, words: Sequence[str], oov_buckets: int = 256) -> None:
        self.itos = [*SPECIALS, *(f"<oov{i}>" for i in range(oov_buckets)), *words]
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        self.oov_buckets = oov_buckets
        self.n_special = len(SPECIALS)

    @classmethod
    def build(cls, texts: Iterable[str], max_words: int = 8000, oov_buckets: int = 256) -> Vocab:
        """The ``max_words`` most frequent words of ``texts`` (ties broken alphabetically)."""
        counts = Counter(w for t in texts for w in tokenize_words(t))
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:max_words]
        return cls([w for w, _ in ranked], oov_buckets)

    def __len__(self) -> int:
        return len(self.itos)

    def id(self, token: str) -> int:
        return self.stoi[token]

    def encode(self, text: str, limit: int | None = None) -> list[int]:
        ids = []
        for w in tokenize_words(text)[:limit]:
            i = self.stoi.get(w)
            if i is None:
                i = self.n_special + zlib.crc32(w.encode()) % self.oov_buckets
            ids.append(i)
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        words = [self.itos[i] for i in ids]
        text = " ".join(words)
        return re.sub(r" ([^\w\s<])", r"\1", text)

    def to_json(self) -> dict:
        return {"words": self.itos[self.n_special + self.oov_buckets :], "oov": self.oov_buckets}

    @classmethod
    def from_json(cls, data: dict) -> Vocab:
        return cls(data["words"], data["oov"])


class StepEncoder:
    """Builds the token layouts above with fixed per-part budgets (so lengths stay bounded).

    Args:
        vocab: the vocabulary.
        question_tokens / observation_tokens / action_tokens / criterion_tokens: budgets.
    """

    def __init__(
        self,
        vocab: Vocab,
        question_tokens: int = 32,
        observation_tokens: int = 40,
        action_tokens: int = 16,
        criterion_tokens: int = 14,
    ) -> None:
        self.vocab = vocab
        self.question_tokens = question_tokens
        self.observation_tokens = observation_tokens
        self.action_tokens = action_tokens
        self.criterion_tokens = criterion_tokens
        self.sp = {s: vocab.id(s) for s in SPECIALS}

    def _action(self, kind: str, text: str) -> list[int]:
        return [self.sp["<act>"], *self.vocab.encode(f"{kind} {text}", self.action_tokens)]

    def _question(self, question: str) -> list[int]:
        words = self.vocab.encode(question, self.question_tokens)
        return [self.sp["<bos>"], self.sp["<q>"], *words]

    def policy_state(self, question: str, observations: Sequence[str]) -> list[int]:
        ids = self._question(question)
        for obs in observations:
            ids += [self.sp["<obs>"], *self.vocab.encode(obs, self.observation_tokens)]
        return ids

    def policy_action(self, kind: str, text: str) -> list[int]:
        return [*self._action(kind, text), self.sp["<eoa>"]]

    def rubric_context(
        self, question: str, steps: Sequence[tuple[str, str, str]], use_prefix: bool = True
    ) -> list[int]:
        """``steps`` = (kind, text, observation) up to and including the scored step."""
        ids = self._question(question)
        if use_prefix:
            for kind, text, obs in steps[:-1]:
                ids += [*self._action(kind, text), self.sp["<res>"],
                        *self.vocab.encode(obs, self.observation_tokens)]
        kind, text, obs = steps[-1]
        ids += [self.sp["<now>"], *self._action(kind, text), self.sp["<res>"],
                *self.vocab.encode(obs, self.observation_tokens), self.sp["<eoa>"]]
        return ids

    def criterion(self, text: str) -> list[int]:
        return self.vocab.encode(text, self.criterion_tokens)
