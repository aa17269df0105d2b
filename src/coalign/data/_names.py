"""Made-up, pronounceable, unique names for the generated world (a seeded syllable generator)."""

from __future__ import annotations

import random

from coalign.errors import ConfigError

__all__ = ["NameMaker"]

_ONSETS = (
    "b d f g h k l m n p r s t v z br dr fr gr kr pr tr st sk sl sh th ch"
).split()
_VOWELS = "a e i o u a e o ai ei ou ia".split()
_CODAS = ("", "", "", "n", "r", "l", "s", "m", "nd", "rt", "sk")
# Every generated word is checked against these, so no name reads as an English word that
# the normalizer or a stopword list would treat specially.
_RESERVED = frozenset({"the", "and", "not", "for", "was", "born", "film", "city", "year"})

_COUNTRY_SUFFIX = ("ia", "land", "stan", "ora", "esh")
# Company name suffix -> the industry its paragraph names, so the two never disagree.
_COMPANY_KIND = (
    ("Labs", "research"), ("Motors", "car"), ("Foods", "food"), ("Systems", "software"),
    ("Textiles", "textile"), ("Airways", "airline"), ("Pharma", "drug"),
    ("Robotics", "robotics"), ("Mining", "mining"), ("Shipping", "shipping"),
)
_FILM_NOUNS = ("Tide", "Mirror", "Harvest", "Winter", "Lantern", "Orchard", "Signal", "Crossing")
_BOOK_NOUNS = ("Letters", "Songs", "Maps", "Gardens", "Bridges", "Voices", "Shadows", "Rivers")


class NameMaker:
    """Draws names from a seeded RNG; every core word is used once across the whole world.

    Keeping core words globally unique means no name is a substring-collision of another
    (a city never shares a word with a film title), so answers stay unambiguous.
    """

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._used: set[str] = set()

    def word(self, min_syllables: int = 2, max_syllables: int = 3) -> str:
        for _ in range(1000):
            n = self._rng.randint(min_syllables, max_syllables)
            parts = []
            for i in range(n):
                coda = self._rng.choice(_CODAS) if i == n - 1 else ""
                parts.append(self._rng.choice(_ONSETS) + self._rng.choice(_VOWELS) + coda)
            word = "".join(parts)
            if 4 <= len(word) <= 11 and word not in self._used and word not in _RESERVED:
                self._used.add(word)
                return word.capitalize()
        raise ConfigError("name space exhausted; lower the world size")

    def person(self) -> str:
        return f"{self.word(2, 2)} {self.word(2, 3)}"

    def city(self) -> str:
        return self.word(2, 3)

    def river(self) -> str:
        return self.word(2, 2)

    def country(self) -> str:
        return self.word(2, 2) + self._rng.choice(_COUNTRY_SUFFIX)

    def company(self) -> tuple[str, str]:
        """A company name and its industry."""
        suffix, industry = self._rng.choice(_COMPANY_KIND)
        return f"{self.word(2, 3)} {suffix}", industry

    def film(self) -> str:
        word, noun = self.word(2, 3), self._rng.choice(_FILM_NOUNS)
        pattern = self._rng.randrange(3)
        if pattern == 0:
            return f"The {noun} of {word}"
        return f"{word} {noun}" if pattern == 1 else f"The {word} {noun}"

    def book(self) -> str:
        word, noun = self.word(2, 3), self._rng.choice(_BOOK_NOUNS)
        pattern = self._rng.randrange(3)
        if pattern == 0:
            return f"{word}'s {noun}"
        return f"{noun} of {word}" if pattern == 1 else f"The {word} {noun}"
