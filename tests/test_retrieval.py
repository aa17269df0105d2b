"""BM25 retrieval: ranking, ties, edge cases, the digest cache, and recall on real data."""

from __future__ import annotations

import pytest

from coalign.data import load_hotpotqa, make_world
from coalign.retrieval import BM25Cache, BM25Index, corpus_digest, gold_recall, tokenize

CORPUS = [
    "Paris is the capital of France.",
    "The Nile flows through Egypt and Sudan.",
    "Mount Kilimanjaro stands in Tanzania.",
    "The Eiffel Tower was built in Paris for the 1889 World's Fair.",
]


def test_tokenize_drops_stopwords_and_punctuation() -> None:
    assert tokenize("Where was the Eiffel Tower built?") == ["eiffel", "tower", "built"]
    assert tokenize("") == []


def test_exact_match_paragraph_ranks_first() -> None:
    index = BM25Index(CORPUS)
    assert index.search("The Nile flows through Egypt and Sudan.", k=1) == [1]
    assert index.search("Eiffel Tower", k=2)[0] == 3
    ranked = index.search_with_scores("Paris", k=4)
    assert {i for i, _ in ranked[:2]} == {0, 3}
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)


def test_k_is_clipped_and_ties_keep_corpus_order() -> None:
    index = BM25Index(CORPUS)
    assert len(index.search("Paris", k=50)) == len(CORPUS) == len(index)
    assert index.search("zebra", k=4) == [0, 1, 2, 3]  # all zero: corpus order
    assert index.search("Paris", k=0) == []
    twins = BM25Index(["red apple", "green pear", "red apple"])
    assert twins.search("apple", k=3) == [0, 2, 1]
    with pytest.raises(ValueError):
        index.search("Paris", k=-1)


def test_degenerate_corpora() -> None:
    assert BM25Index([]).search("anything", k=3) == []
    empty = BM25Index(["", "the of a"])  # no token survives the stopword list
    assert empty.search("the apple", k=2) == [0, 1]
    assert list(BM25Index(["apple"]).scores("?")) == [0.0]


def test_cache_reuses_index_by_content() -> None:
    cache = BM25Cache(maxsize=2)
    first = cache.get(CORPUS)
    assert cache.get(list(CORPUS)) is first
    assert (cache.hits, cache.misses) == (1, 1)
    cache.get(["a b"])
    cache.get(["c d"])  # evicts CORPUS, the least recently used
    assert len(cache) == 2
    assert cache.get(CORPUS) is not first
    # Boundaries are part of the digest.
    assert corpus_digest(["ab", "c"]) != corpus_digest(["a", "bc"])


def test_bm25_gold_recall_hotpotqa(shared_data) -> None:
    examples = load_hotpotqa(shared_data / "hotpotqa" / "hotpotqa_dev_unified.jsonl")
    recall = gold_recall(examples, k=3)
    print(f"\nBM25 top-3 gold recall, HotpotQA ({len(examples)} q): {recall:.3f}")
    # Measured 0.782; a broken ranker sits near the 0.3 of a random top-3 of ten.
    assert recall > 0.7


def test_bm25_gold_recall_world() -> None:
    examples = make_world(seed=0, n_questions=200)
    recall = gold_recall(examples, k=3)
    print(f"\nBM25 top-3 gold recall, world (200 q, 8 paragraphs): {recall:.3f}")
    assert 0.5 < recall < 1.0
