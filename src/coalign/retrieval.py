"""Lexical retrieval: a BM25 index (bm25s) over a small corpus, plus a digest-keyed cache.

Multi-hop QA retrieves from each question's own handful of paragraphs, so indexes are tiny,
built by the thousand and often rebuilt for the same paragraphs (every rollout of a question
sees the same corpus): ``BM25Cache`` keeps recently built ones.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from coalign.errors import ConfigError

__all__ = ["STOPWORDS", "BM25Cache", "BM25Index", "corpus_digest", "gold_recall", "tokenize"]

# Short on purpose: question words ("who", "which", "when") are dropped, content kept.
STOPWORDS = frozenset(
    """a an the and or but if of at by for with about against between into through during
    before after above below to from up down in out on off over under again further then once
    here there all any both each few more most other some such no nor not only own same so than
    too very s t can will just don should now is are was were be been being have has had having
    do does did doing i me my we our you your he him his she her it its they them their what
    which who whom whose this that these those am as until while where when why how""".split()
)
_TOKEN = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens of ``text`` without stopwords (no stemming)."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


def corpus_digest(texts: Sequence[str]) -> str:
    """A content hash of an ordered corpus (length-prefixed, so boundaries count)."""
    h = hashlib.blake2b(digest_size=16)
    for text in texts:
        data = text.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class BM25Index:
    """BM25 (Lucene variant, k1=1.5, b=0.75) over ``texts``.

    Example:
        >>> index = BM25Index(["Paris is in France.", "Rome is in Italy."])
        >>> index.search("Where is Rome?", k=1)
        [1]
    """

    def __init__(self, texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self._size = len(texts)
        tokens = [tokenize(t) for t in texts]
        self._model: Any = None  # bm25s.BM25, built lazily
        # bm25s cannot index a corpus without a single token; such a corpus scores all zero.
        if any(tokens):
            import bm25s  # deferred: importing bm25s costs ~2 s at CLI start-up

            self._model = bm25s.BM25(k1=k1, b=b)
            self._model.index(tokens, show_progress=False)

    def __len__(self) -> int:
        return self._size

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every text for ``query`` (zeros when nothing matches)."""
        if self._model is None:
            return np.zeros(self._size, dtype=np.float32)
        ids = self._model.get_tokens_ids(tokenize(query))
        if not ids:
            return np.zeros(self._size, dtype=np.float32)
        return np.asarray(self._model.get_scores_from_ids(ids), dtype=np.float32)

    def search_with_scores(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best ``(index, score)`` pairs, best first; ties keep corpus order."""
        if k < 0:
            raise ConfigError(f"k must be >= 0 (got {k})")
        scores = self.scores(query)
        order = np.argsort(-scores, kind="stable")[: min(k, self._size)]
        return [(int(i), float(scores[i])) for i in order]

    def search(self, query: str, k: int) -> list[int]:
        """Indices of the ``k`` best texts for ``query`` (``k`` clipped to the corpus size)."""
        return [i for i, _ in self.search_with_scores(query, k)]


class BM25Cache:
    """A bounded LRU of ``BM25Index`` objects keyed by ``corpus_digest``.

    Not thread-safe by itself; give each worker its own cache or guard it with a lock.
    """

    def __init__(self, maxsize: int = 1024) -> None:
        if maxsize < 1:
            raise ConfigError(f"maxsize must be >= 1 (got {maxsize})")
        self._maxsize = maxsize
        self._items: OrderedDict[str, BM25Index] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, texts: Sequence[str]) -> BM25Index:
        """The index of ``texts``, built on first request."""
        key = corpus_digest(texts)
        index = self._items.get(key)
        if index is not None:
            self.hits += 1
            self._items.move_to_end(key)
            return index
        self.misses += 1
        index = BM25Index(texts)
        self._items[key] = index
        if len(self._items) > self._maxsize:
            self._items.popitem(last=False)
        return index


def gold_recall(examples: Sequence[Any], k: int = 3, *, titles: bool = True) -> float:
    """Mean share of each example's gold paragraphs that BM25 ranks in its top ``k``.

    Works on multi-hop QA examples shaped like HotpotQA: ``inputs["paragraphs"]`` of
    ``{"title", "text"}`` and ``meta["supporting_titles"]``; the raw question is the query.
    ``titles`` prepends each title to its text before indexing.
    """
    if not examples:
        raise ValueError("gold_recall: no examples")
    total = 0.0
    for ex in examples:
        paragraphs = ex.inputs["paragraphs"]
        texts = [f"{p['title']}. {p['text']}" if titles else p["text"] for p in paragraphs]
        top = BM25Index(texts).search(ex.inputs["question"], k)
        found = {paragraphs[i]["title"] for i in top}
        gold = set(ex.meta["supporting_titles"])
        total += len(gold & found) / len(gold)
    return total / len(examples)
