"""Encyclopedia-style paragraphs for the generated world, written from an entity's facts.

Each paragraph states every fact the questions rely on exactly once, in one of several
phrasings, then adds neutral colour sentences (no names, no four-digit numbers, so they never
compete with an answer) until it reaches about 40 words, staying under about 80.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

__all__ = ["write_paragraph"]

MIN_WORDS, MAX_WORDS = 40, 80

# (sentences stating facts, always kept; colour sentences, added until long enough)
_Sentences = tuple[list[str], list[str]]

_PRONOUN = {"f": ("She", "her"), "m": ("He", "his")}


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _join(names: Sequence[str]) -> str:
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + ", and " + names[-1]


def _person(name: str, f: Mapping[str, Any], rng: random.Random) -> _Sentences:
    she, her = _PRONOUN[f["gender"]]
    role, works = f["role"], _join(f.get("works", []))
    job = {"director": "film director", "author": "novelist", "executive": "business executive",
           "actor": "actor"}[role]
    intro = rng.choice([
        f"{name} (born {f['born_year']}) is {_a(job)} who was born in {f['born_in']}.",
        f"{name} is {_a(job)}, born in {f['born_in']} in {f['born_year']}.",
        f"Born in {f['born_in']} in {f['born_year']}, {name} is {_a(job)}.",
    ])
    if role == "director":
        work = rng.choice([f"{she} directed {works}.",
                           f"{she} is best known for directing {works}."])
    elif role == "author":
        work = rng.choice([f"{she} wrote {works}.", f"{she} is the author of {works}."])
    elif role == "actor":
        work = rng.choice([f"{she} has appeared in {works}.", f"{she} starred in {works}."])
    else:
        work = rng.choice([f"{she} is the chief executive of {f['company']}.",
                           f"{she} has led {f['company']} as its chief executive."])
    colour = [
        f"{she} studied music before turning to {'the stage' if role == 'actor' else 'work'}.",
        f"Colleagues describe {her} manner as patient and exacting.",
        f"{she} rarely gives interviews.",
        f"{she} has received several regional awards.",
        f"In {her} spare time {she.lower()} keeps bees and restores old clocks.",
        f"{she} taught evening classes for a few years.",
    ]
    return [intro, work], _shuffled(colour, rng)


def _city(name: str, f: Mapping[str, Any], rng: random.Random) -> _Sentences:
    intro = rng.choice([
        f"{name} is a city in {f['country']}.",
        f"{name} is a city located in {f['country']}.",
        f"The city of {name} lies in {f['country']}.",
    ])
    colour = [
        f"It sits on the banks of the {f['river']} river.",
        f"About {f['population_k']} thousand people live there.",
        "Its old market square is lined with painted wooden houses.",
        "The local economy rests on fishing, weaving and small workshops.",
        "A narrow-gauge railway links it with the surrounding villages.",
        "Winters there are long, and the summer festival draws many visitors.",
    ]
    return [intro], _shuffled(colour, rng)


def _country(name: str, f: Mapping[str, Any], rng: random.Random) -> _Sentences:
    intro = rng.choice([
        f"{name} is a country whose capital is {f['capital']}.",
        f"{name} is a small country; its capital city is {f['capital']}.",
    ])
    others = [c for c in f["cities"] if c != f["capital"]]
    cities = f"Other cities of {name} include {_join(others)}." if others else ""
    colour = [
        "Its landscape is a mix of forested hills and wide river valleys.",
        "The national language has several regional dialects.",
        "Farming and timber have long shaped its economy.",
        "It is known for its choral music and its wool.",
    ]
    return [s for s in (intro, cities) if s], _shuffled(colour, rng)


def _company(name: str, f: Mapping[str, Any], rng: random.Random) -> _Sentences:
    intro = rng.choice([
        f"{name} is {_a(f['industry'])} company founded in {f['founded']}.",
        f"Founded in {f['founded']}, {name} is {_a(f['industry'])} company.",
        f"{name} is {_a(f['industry'])} firm that was founded in {f['founded']}.",
    ])
    hq = rng.choice([f"It is headquartered in {f['hq']}.", f"Its head office is in {f['hq']}."])
    ceo = rng.choice([f"Its chief executive is {f['ceo']}.", f"The company is led by {f['ceo']}."])
    colour = [
        f"It employs about {f['staff']} hundred people.",
        "It started as a small family workshop.",
        "Most of its sales come from exports.",
        "The firm has opened several regional branches.",
        "It is known for its long product warranties.",
    ]
    return [intro, hq, ceo], _shuffled(colour, rng)


def _film(name: str, f: Mapping[str, Any], rng: random.Random) -> _Sentences:
    intro = rng.choice([
        f"{name} is a {f['year']} {f['genre']} film directed by {f['director']}.",
        f"{name} is {_a(f['genre'])} film released in {f['year']}; it was directed by "
        f"{f['director']}.",
        f"Directed by {f['director']}, {name} is {_a(f['genre'])} film from {f['year']}.",
    ])
    cast = rng.choice([f"It stars {_join(f['cast'])}.", f"The cast includes {_join(f['cast'])}."])
    colour = [
        f"The film runs {f['minutes']} minutes.",
        "It was shot over a single autumn in a coastal town.",
        "Critics praised its score and its long, quiet takes.",
        "It was a modest success at the box office.",
        "The story follows two siblings who inherit a failing farm.",
    ]
    return [intro, cast], _shuffled(colour, rng)


def _book(name: str, f: Mapping[str, Any], rng: random.Random) -> _Sentences:
    intro = rng.choice([
        f"{name} is {_a(f['genre'])} novel by {f['author']}, first published in {f['year']}.",
        f"{name} is {_a(f['genre'])} novel written by {f['author']} and published in {f['year']}.",
        f"Published in {f['year']}, {name} is {_a(f['genre'])} novel by {f['author']}.",
    ])
    colour = [
        f"It runs to {f['pages']} pages.",
        "The story is told through a series of letters.",
        "It was translated into several languages.",
        "Reviewers admired its quiet humour.",
        "The novel follows a ferryman and his estranged daughter.",
    ]
    return [intro], _shuffled(colour, rng)


_WRITERS: Mapping[str, Callable[[str, Mapping[str, Any], random.Random], _Sentences]] = (
    MappingProxyType({
        "person": _person, "city": _city, "country": _country,
        "company": _company, "film": _film, "book": _book,
    })
)


def _shuffled(items: list[str], rng: random.Random) -> list[str]:
    rng.shuffle(items)
    return items


def write_paragraph(kind: str, name: str, facts: Mapping[str, Any], rng: random.Random) -> str:
    """A ~40-80 word paragraph about ``name``; the first sentences carry all the facts."""
    facts_said, colour = _WRITERS[kind](name, facts, rng)
    keep = list(facts_said)
    words = sum(len(s.split()) for s in keep)
    for sentence in colour:
        if words >= MIN_WORDS:
            break
        n = len(sentence.split())
        if words + n > MAX_WORDS:
            continue
        keep.append(sentence)
        words += n
    return " ".join(keep)
