"""Shared helpers of the tests/test_rewards_*.py files (not a test module).

``minilm()`` loads the bundled MiniLM once per test session (loading takes seconds); ``qa_pairs``
builds small synthetic QA preference pairs whose reward is decided by the evidence: the answer that
the passage supports wins.
"""

from __future__ import annotations

import functools
import random

from coalign.pairs import PreferencePair, label_for
from coalign.rewards import MiniLMBackbone

NAMES = [
    "Alda",
    "Borin",
    "Cyra",
    "Dovan",
    "Elmi",
    "Faro",
    "Gesa",
    "Hulo",
    "Ivar",
    "Jorna",
    "Kell",
    "Lumi",
    "Mardo",
    "Nessa",
    "Orin",
    "Pella",
    "Quill",
    "Rhea",
    "Soren",
    "Tova",
]
CITIES = [
    "Varna",
    "Tilsen",
    "Oskal",
    "Brevik",
    "Mondo",
    "Quarra",
    "Lissel",
    "Denhold",
    "Arvik",
    "Pomer",
    "Zelt",
    "Halm",
    "Kerrin",
    "Ulvo",
    "Sarn",
    "Fenwick",
]


@functools.cache
def minilm() -> MiniLMBackbone:
    return MiniLMBackbone()


def qa_pairs(n_inputs: int, seed: int, flip: bool = False, component: str = "answer"):
    """Pairs of (supported answer, unsupported answer) per question; ``flip`` inverts the reward."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n_inputs):
        person = f"{rng.choice(NAMES)} {rng.choice(NAMES)}son"
        right, wrong = rng.sample(CITIES, 2)
        inputs = {
            "question": f"In which city was {person} born?",
            "passages": [
                {
                    "title": person,
                    "text": f"{person} was born in {right}. "
                    f"{person} later worked as a {rng.choice(['baker', 'pilot', 'clerk'])}.",
                },
            ],
        }
        good, bad = ({"answer": right}, 1.0), ({"answer": wrong}, 0.0)
        if flip:
            good, bad = (good[0], 0.0), (bad[0], 1.0)
        a, b = (good, bad) if rng.random() < 0.5 else (bad, good)
        pairs.append(
            PreferencePair(
                component,
                f"{component}-{seed}-{i}",
                inputs,
                a[0],
                b[0],
                a[1],
                b[1],
                label_for(a[1], b[1], 0.0),
            )
        )
    return pairs
