"""A seeded, generated multi-hop QA world: offline data the project makes itself.

``build_world`` draws made-up people, cities, countries, companies, films and books with
consistent relations and writes one short paragraph per entity. ``World.questions`` asks
bridge questions (the hop-1 paragraph names a bridge entity whose own paragraph holds the
answer) and comparison questions (two entities, both paragraphs needed), each with its own
shuffled paragraph set: the gold paragraphs plus distractors that share words with the
question. Same seed and size give the identical world.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from coalign.data._base import Example
from coalign.data._names import NameMaker
from coalign.data._world_text import write_paragraph
from coalign.errors import ConfigError
from coalign.retrieval import tokenize

__all__ = ["Entity", "World", "build_world", "make_world"]

_FILM_GENRES = ("drama", "comedy", "thriller", "war", "science fiction", "musical")
_BOOK_GENRES = ("historical", "crime", "comic", "fantasy", "family")
_MAX_WORKS = 3  # films or books per person, so a person's paragraph stays short
_REFERENCE_FIELDS = ("born_in", "works", "company", "country", "capital", "cities", "hq", "ceo",
                     "director", "cast", "author")


@dataclass(frozen=True)
class Entity:
    """A named thing of one ``kind`` with its facts (other entities are referred to by name)."""

    name: str
    kind: str
    facts: Mapping[str, Any]

    def references(self) -> list[str]:
        """Names of the entities this one's facts (and so its paragraph) mention."""
        out: list[str] = []
        for key in _REFERENCE_FIELDS:
            value = self.facts.get(key)
            if isinstance(value, str):
                out.append(value)
            elif isinstance(value, (list, tuple)):
                out.extend(value)
        return out


@dataclass(frozen=True)
class _Question:
    text: str
    answer: str
    hops: tuple[str, str]
    type: str
    template: str
    bridge: str | None = None


@dataclass(frozen=True)
class World:
    """Entities by name, one paragraph per entity (titled by the entity's name)."""

    seed: int
    entities: Mapping[str, Entity]
    paragraphs: Mapping[str, str]
    # Derived lookups, filled once in __post_init__ (tokens lazily): not part of equality.
    _kinds: dict[str, list[Entity]] = field(default_factory=dict, repr=False, compare=False)
    _referrers: dict[str, set[str]] = field(default_factory=dict, repr=False, compare=False)
    _tokens: dict[str, frozenset[str]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for entity in self.entities.values():
            self._kinds.setdefault(entity.kind, []).append(entity)
            for ref in entity.references():
                self._referrers.setdefault(ref, set()).add(entity.name)

    def of_kind(self, kind: str) -> list[Entity]:
        return list(self._kinds.get(kind, []))

    def questions(self, n: int, n_paragraphs: int = 8) -> list[Example]:
        """``n`` distinct questions (roughly two thirds bridge, one third comparison).

        Raises:
            ConfigError: ``n_paragraphs`` below 2 or above the number of entities, or the
                world is too small for ``n`` distinct questions.
        """
        if not 2 <= n_paragraphs <= len(self.entities):
            raise ConfigError(
                f"n_paragraphs: must be between 2 and {len(self.entities)} (got {n_paragraphs})"
            )
        rng = random.Random(f"coalign-world-questions-{self.seed}")
        templates = _templates(self)
        weights = [w for _, w, _ in templates]
        seen: set[tuple[str, frozenset[str]]] = set()
        examples: list[Example] = []
        for _ in range(50 * n + 100):
            if len(examples) >= n:
                break
            name, _, ask = rng.choices(templates, weights)[0]
            q = ask(rng)
            if q is None or (key := (name, frozenset(q.hops))) in seen:
                continue
            seen.add(key)
            examples.append(self._example(q, len(examples), n_paragraphs, rng))
        if len(examples) < n:
            raise ConfigError(f"n_questions: the world holds only {len(examples)} distinct "
                              f"questions (asked for {n}); build a larger world")
        return examples

    def _example(self, q: _Question, i: int, n_paragraphs: int, rng: random.Random) -> Example:
        titles = list(q.hops) + self._distractors(q, n_paragraphs - 2, rng)
        rng.shuffle(titles)
        return Example(
            id=f"world-{self.seed}-{i:04d}",
            inputs={
                "question": q.text,
                "paragraphs": [{"title": t, "text": self.paragraphs[t]} for t in titles],
            },
            target=q.answer,
            meta={"supporting_titles": list(q.hops), "hops": list(q.hops), "type": q.type,
                  "template": q.template, "bridge": q.bridge},
        )

    def _distractors(self, q: _Question, k: int, rng: random.Random) -> list[str]:
        """``k`` titles that look relevant: neighbours of the gold entities and same-kind
        entities, ranked by words shared with the question (random tie-break)."""
        gold = set(q.hops)
        near = {r for h in q.hops for r in self.entities[h].references()}
        near |= {r for h in q.hops for r in self._referrers.get(h, ())}
        kinds = sorted({self.entities[h].kind for h in q.hops})
        same_kind = [e.name for kind in kinds for e in self._kinds[kind]]
        pool = (near | set(rng.sample(same_kind, min(len(same_kind), 6 * k + 6)))) - gold
        if len(pool) < k:
            pool |= set(rng.sample(sorted(self.entities.keys() - gold - pool), k - len(pool)))
        words = set(tokenize(q.text))
        ranked = sorted(
            sorted(pool),  # fixed order before the seeded tie-break
            key=lambda t: -(len(words & self._token_set(t)) + (t in near) + rng.random()),
        )
        return ranked[:k]

    def _token_set(self, title: str) -> frozenset[str]:
        tokens = self._tokens.get(title)
        if tokens is None:
            tokens = self._tokens[title] = frozenset(tokenize(self.paragraphs[title]))
        return tokens


def _templates(w: World) -> list[tuple[str, float, Callable[[random.Random], _Question | None]]]:
    ent = w.entities
    films, books, companies = w.of_kind("film"), w.of_kind("book"), w.of_kind("company")
    people, cities = w.of_kind("person"), w.of_kind("city")

    def via(subject: Entity, link: str, fact: str, text: str, name: str) -> _Question:
        bridge = ent[subject.facts[link]]
        return _Question(text.format(s=subject.name), str(bridge.facts[fact]),
                         (subject.name, bridge.name), "bridge", name, bridge.name)

    def earlier(pool: list[Entity], fact: str, text: str, name: str, latest: bool = False):
        def ask(rng: random.Random) -> _Question | None:
            a, b = rng.sample(pool, 2)
            if a.facts[fact] == b.facts[fact]:
                return None  # a tie has no single right answer
            pick = max if latest else min
            winner = pick((a, b), key=lambda e: e.facts[fact])
            return _Question(text.format(a=a.name, b=b.name), winner.name, (a.name, b.name),
                             "comparison", name)
        return ask

    def same_country(rng: random.Random) -> _Question:
        a = rng.choice(cities)
        mates = [c for c in cities if c.facts["country"] == a.facts["country"] and c is not a]
        others = [c for c in cities if c.facts["country"] != a.facts["country"]]
        same = rng.random() < 0.5 and bool(mates)
        b = rng.choice(mates if same else others)
        a, b = rng.sample((a, b), 2)
        return _Question(f"Are {a.name} and {b.name} located in the same country?",
                         "yes" if same else "no", (a.name, b.name), "comparison", "same_country")

    return [
        ("film_director_city", 0.14, lambda r: via(r.choice(films), "director", "born_in",
         "In which city was the director of {s} born?", "film_director_city")),
        ("film_director_year", 0.08, lambda r: via(r.choice(films), "director", "born_year",
         "In what year was the director of {s} born?", "film_director_year")),
        ("book_author_city", 0.12, lambda r: via(r.choice(books), "author", "born_in",
         "In which city was the author of {s} born?", "book_author_city")),
        ("book_author_year", 0.06, lambda r: via(r.choice(books), "author", "born_year",
         "What year was the author of {s} born in?", "book_author_year")),
        ("company_ceo_city", 0.10, lambda r: via(r.choice(companies), "ceo", "born_in",
         "Where was the chief executive of {s} born?", "company_ceo_city")),
        ("company_country", 0.08, lambda r: via(r.choice(companies), "hq", "country",
         "In which country is {s} headquartered?", "company_country")),
        ("person_country", 0.12, lambda r: via(r.choice(people), "born_in", "country",
         "In which country was {s} born?", "person_country")),
        ("company_older", 0.07, earlier(companies, "founded",
         "Which company was founded first, {a} or {b}?", "company_older")),
        ("person_older", 0.07, earlier(people, "born_year",
         "Who was born earlier, {a} or {b}?", "person_older")),
        ("film_newer", 0.05, earlier(films, "year",
         "Which film was released more recently, {a} or {b}?", "film_newer", latest=True)),
        ("book_older", 0.04, earlier(books, "year",
         "Which book was published first, {a} or {b}?", "book_older")),
        ("same_country", 0.07, same_country),
    ]


def build_world(seed: int = 0, size: int = 100) -> World:
    """Draw a consistent world sized for about ``size`` distinct questions."""
    rng = random.Random(f"coalign-world-{seed}")
    names = NameMaker(rng)
    size = max(size, 20)
    facts: dict[str, dict[str, Any]] = {}
    kinds: dict[str, str] = {}

    def add(kind: str, name: str, **values: Any) -> str:
        kinds[name], facts[name] = kind, values
        return name

    city_names: list[str] = []
    for _ in range(4 + size // 60):
        country = add("country", names.country(), cities=[])
        for _ in range(3):
            city = add("city", names.city(), country=country, river=names.river(),
                       population_k=rng.randint(12, 900))
            facts[country]["cities"].append(city)
            city_names.append(city)
        facts[country]["capital"] = facts[country]["cities"][0]

    def person(role: str) -> str:
        return add("person", names.person(), role=role, gender=rng.choice("fm"),
                   born_in=rng.choice(city_names), born_year=rng.randint(1930, 1996), works=[])

    actors = [person("actor") for _ in range(6 + size // 6)]
    for _ in range(4 + size // 8):
        director = person("director")
        born = facts[director]["born_year"]
        for _ in range(rng.randint(1, 2)):
            free = [a for a in actors if len(facts[a]["works"]) < _MAX_WORKS] or [person("actor")]
            cast = rng.sample(free, min(2, len(free)))
            film = add("film", names.film(), director=director, cast=cast,
                       year=rng.randint(born + 22, min(2024, born + 70)),
                       genre=rng.choice(_FILM_GENRES), minutes=rng.randint(78, 170))
            facts[director]["works"].append(film)
            for actor in cast:
                facts[actor]["works"].append(film)
    for _ in range(4 + size // 10):
        author = person("author")
        born = facts[author]["born_year"]
        for _ in range(rng.randint(1, 2)):
            book = add("book", names.book(), author=author, genre=rng.choice(_BOOK_GENRES),
                       year=rng.randint(born + 20, min(2024, born + 75)),
                       pages=rng.randint(120, 700))
            facts[author]["works"].append(book)
    for _ in range(4 + size // 8):
        name, industry = names.company()
        company = add("company", name, industry=industry,
                      founded=rng.randint(1850, 2015), hq=rng.choice(city_names),
                      staff=rng.randint(2, 90))
        ceo = person("executive")
        facts[company]["ceo"], facts[ceo]["company"] = ceo, company
        # Head office and the CEO's birthplace differ, so the hop-1 paragraph alone never
        # holds the answer to "where was the chief executive born?".
        facts[ceo]["born_in"] = rng.choice([c for c in city_names if c != facts[company]["hq"]])
    entities = {n: Entity(n, kinds[n], MappingProxyType(facts[n])) for n in facts}
    paragraphs = {n: write_paragraph(kinds[n], n, facts[n], rng) for n in facts}
    return World(seed, MappingProxyType(entities), MappingProxyType(paragraphs))


def make_world(seed: int = 0, n_questions: int = 100, n_paragraphs: int = 8) -> list[Example]:
    """``n_questions`` generated multi-hop questions, each with ``n_paragraphs`` paragraphs.

    Inputs mirror HotpotQA (``question``, ``paragraphs``); ``target`` is the short answer;
    ``meta`` has ``supporting_titles``, ``hops`` (hop-1 then hop-2 title; for comparisons the
    two compared entities in question order), ``type`` (``"bridge"``/``"comparison"``),
    ``template`` and ``bridge`` (the bridge entity's name, ``None`` for comparisons).
    The world is sized from ``n_questions``, so the same seed with another count gives
    another world.
    """
    if n_questions < 1:
        raise ConfigError(f"n_questions: must be >= 1 (got {n_questions})")
    return build_world(seed, n_questions).questions(n_questions, n_paragraphs)
