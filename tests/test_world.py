"""The generated multi-hop world: determinism, shape and answerability invariants."""

from __future__ import annotations

import re

import pytest

from coalign.data import build_world, make_world
from coalign.errors import ConfigError


@pytest.fixture(scope="module")
def world():
    return make_world(seed=0, n_questions=300, n_paragraphs=8)


def test_same_seed_same_world_and_other_seed_differs() -> None:
    a, b = make_world(seed=3, n_questions=60), make_world(seed=3, n_questions=60)
    assert a == b
    c = make_world(seed=4, n_questions=60)
    assert [ex.inputs["question"] for ex in a] != [ex.inputs["question"] for ex in c]
    assert build_world(3, 60).paragraphs == build_world(3, 60).paragraphs
    assert build_world(3, 60).paragraphs != build_world(4, 60).paragraphs


def test_shape(world) -> None:
    assert len(world) == 300
    assert len({ex.id for ex in world}) == 300
    assert len({ex.inputs["question"] for ex in world}) == 300
    for ex in world:
        paragraphs = ex.inputs["paragraphs"]
        titles = [p["title"] for p in paragraphs]
        assert len(paragraphs) == 8 and len(set(titles)) == 8
        assert ex.meta["type"] in {"bridge", "comparison"}
        assert ex.meta["supporting_titles"] == ex.meta["hops"]
        assert len(ex.meta["hops"]) == 2 and set(ex.meta["hops"]) <= set(titles)
    types = [ex.meta["type"] for ex in world]
    assert 0.2 < types.count("comparison") / len(types) < 0.5
    # Gold paragraphs are shuffled in, not always first.
    first_titles = [ex.inputs["paragraphs"][0]["title"] for ex in world]
    assert sum(t in ex.meta["hops"] for t, ex in zip(first_titles, world, strict=True)) < 150


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_answers_are_in_the_gold_paragraphs(seed: int) -> None:
    for ex in make_world(seed=seed, n_questions=300):
        text = {p["title"]: p["text"] for p in ex.inputs["paragraphs"]}
        gold = " ".join(text[t] for t in ex.meta["hops"])
        if ex.target in ("yes", "no"):
            continue
        assert ex.target in gold, ex
        if ex.meta["type"] == "bridge":
            # The answer sits in the hop-2 paragraph, the bridge is named in the hop-1 one.
            hop1, hop2 = ex.meta["hops"]
            assert ex.meta["bridge"] == hop2
            assert hop2 in text[hop1]
            assert ex.target in text[hop2]
            assert ex.target not in text[hop1]
        else:
            assert ex.target in ex.meta["hops"]
            assert ex.target in ex.inputs["question"]


def test_comparison_answers_follow_the_facts() -> None:
    world = build_world(seed=1, size=200)
    facts = {name: e.facts for name, e in world.entities.items()}
    for ex in world.questions(200):
        a, b = ex.meta["hops"]
        template = ex.meta["template"]
        if template == "same_country":
            same = facts[a]["country"] == facts[b]["country"]
            assert ex.target == ("yes" if same else "no")
        elif template in ("company_older", "person_older", "book_older", "film_newer"):
            key = {"company_older": "founded", "person_older": "born_year",
                   "book_older": "year", "film_newer": "year"}[template]
            pick = max if template == "film_newer" else min
            assert ex.target == pick((a, b), key=lambda n, key=key: facts[n][key])
            assert facts[a][key] != facts[b][key]


def test_yes_and_no_both_occur(world) -> None:
    answers = [ex.target for ex in world if ex.meta["template"] == "same_country"]
    assert "yes" in answers and "no" in answers


def test_names_are_unique_and_paragraphs_short() -> None:
    world = build_world(seed=0, size=500)
    names = list(world.entities)
    assert len(names) == len(set(names)) > 300
    words = [len(text.split()) for text in world.paragraphs.values()]
    assert min(words) >= 30 and max(words) <= 90
    assert 38 <= sum(words) / len(words) <= 80
    # Names are made of letters only (plus the possessive in book titles).
    assert all(re.fullmatch(r"[A-Z][A-Za-z' ]+", n) for n in names)


def test_distractors_share_words_with_the_question(world) -> None:
    def words(s: str) -> set[str]:
        return set(re.findall(r"\w+", s.lower())) - {"the", "of", "in", "was", "a", "or"}

    sharing = 0
    total = 0
    for ex in world:
        q = words(ex.inputs["question"])
        for p in ex.inputs["paragraphs"]:
            if p["title"] not in ex.meta["hops"]:
                total += 1
                sharing += bool(q & words(p["title"] + " " + p["text"]))
    assert sharing / total > 0.9


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError, match="n_paragraphs"):
        make_world(n_questions=5, n_paragraphs=1)
    with pytest.raises(ConfigError, match="n_questions"):
        make_world(n_questions=0)
    assert len(make_world(n_questions=5, n_paragraphs=2)[0].inputs["paragraphs"]) == 2
