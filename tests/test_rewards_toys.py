"""The reference's three worked toys, with the aligned reward *trained from pairs*.

Each toy's per-query rewards serve as the Monte-Carlo rewards of collected pairs. A LocalRewardModel
is fit on those pairs (ties dropped, as collection would record them), then the system picks, per
query, the output the trained LRF ranks higher. That reproduces the aligned strategy's figure; the
greedy naive proxy reproduces the naive figure.
"""

from __future__ import annotations

import pytest

from coalign.pairs import PreferencePair, label_for
from coalign.rewards import (
    HeuristicReward,
    LocalRewardModel,
    TrainConfig,
    query_overlap_reward,
    shorter_output_reward,
)
from tests.rewards_support import minilm

# Retriever: passage A echoes the question's words, passage B paraphrases and holds the fact.
RETRIEVER = [
    (
        "Who directed the film Jaws?",
        "The film Jaws is a famous film; who directed the film Jaws is often asked.",
        "Steven Spielberg made the 1975 shark thriller about a great white.",
        0.20,
        0.90,
    ),
    (
        "When was the Eiffel Tower built?",
        "The Eiffel Tower is a tower; when it was built interests visitors to the tower.",
        "Construction of the Paris landmark finished in 1889 for the World Fair.",
        0.30,
        0.85,
    ),
    (
        "What language is spoken in Brazil?",
        "Brazil is large, and the language spoken in Brazil is a topic in Brazil.",
        "Most Brazilians talk in Portuguese, inherited from colonial times.",
        0.45,
        0.70,
    ),
    (
        "Who wrote the novel Dracula?",
        "The novel Dracula is a novel; who wrote Dracula is a question about the novel.",
        "Bram Stoker, an Irish author, published the vampire story in 1897.",
        0.10,
        0.95,
    ),
]
# Model selector: correctness of model X / model Y per biomedical question (Q5: both wrong).
SELECTOR = [
    ("Does aspirin reduce the risk of colorectal adenoma recurrence?", 1, 0),
    ("Is vitamin D supplementation linked to lower fracture rates in the elderly?", 0, 1),
    ("Does metformin use change survival in pancreatic cancer patients?", 0, 1),
    ("Are statins associated with reduced sepsis mortality?", 1, 0),
    ("Does early mobilization shorten ICU stay after cardiac surgery?", 0, 0),
    ("Is maternal smoking a risk factor for childhood asthma?", 0, 1),
]
# Hint generator: (question, short hint, long hint, F1 short, F1 long)
HINTS = [
    (
        "Which director of Alien also made Blade Runner?",
        "The director.",
        "Ridley Scott directed both Alien (1979) and Blade Runner (1982).",
        0.25,
        0.92,
    ),
    (
        "Which city hosts the team that won the 1995 NBA title?",
        "A city in Texas.",
        "The Houston Rockets won the 1995 NBA title; they play in Houston.",
        0.30,
        0.88,
    ),
    (
        "What river flows through the capital of Hungary?",
        "The Danube.",
        "Budapest, Hungary's capital, lies on both banks of the Danube river.",
        0.70,
        0.75,
    ),
    (
        "Which author of Emma was born in Steventon?",
        "The author.",
        "Jane Austen, who wrote Emma, was born in Steventon, Hampshire.",
        0.20,
        0.85,
    ),
    (
        "What is the chemical symbol of the element named after Curie's homeland?",
        "Po.",
        "Polonium, named for Poland where Marie Curie was born, has symbol Po; radium differs.",
        0.65,
        0.60,
    ),
]


def _pairs(
    component: str, rows: list[tuple[str, dict, dict, float, float]]
) -> list[PreferencePair]:
    return [
        PreferencePair(component, f"q{i}", {"question": q}, a, b, ra, rb, label_for(ra, rb, 0.0))
        for i, (q, a, b, ra, rb) in enumerate(rows, 1)
    ]


def _greedy(model, component: str, rows) -> float:
    """Mean reward when each query gets the output ``model`` scores higher (a on equal score)."""
    total = 0.0
    for q, a, b, ra, rb in rows:
        sa, sb = model.score_batch(component, [({"question": q}, a), ({"question": q}, b)])
        total += ra if sa >= sb else rb
    return total / len(rows)


def _trained(component: str, description: str, pairs, seed: int) -> LocalRewardModel:
    model = LocalRewardModel(minilm(), {component: description}, TrainConfig(seed=seed))
    report = model.fit(pairs)
    assert report.pairs == {component: sum(not p.is_tie for p in pairs)}
    return model


@pytest.mark.parametrize("seed", [0, 1])
def test_retriever_toy(seed: int) -> None:
    rows = [(q, {"passage": a}, {"passage": b}, fa, fb) for q, a, b, fa, fb in RETRIEVER]
    pairs = _pairs("retriever", rows)
    assert all(p.label == "b" for p in pairs)
    lrf = _trained("retriever", "Retriever: picks the passage handed to the generator", pairs, seed)
    assert _greedy(lrf, "retriever", rows) == pytest.approx(0.85)
    assert _greedy(query_overlap_reward(), "retriever", rows) == pytest.approx(0.2625)


@pytest.mark.parametrize("seed", [0, 1])
def test_model_selector_toy(seed: int) -> None:
    rows = [(q, {"model": "X"}, {"model": "Y"}, float(x), float(y)) for q, x, y in SELECTOR]
    pairs = _pairs("selector", rows)
    non_tie = [p for p in pairs if not p.is_tie]
    assert [p.example_id for p in pairs if p.is_tie] == ["q5"]  # Q5 yields no training pair
    lrf = _trained(
        "selector", "Model selector: chooses which LLM answers this question", pairs, seed
    )
    assert len(non_tie) == 5
    assert _greedy(lrf, "selector", rows) == pytest.approx(5 / 6)
    leaderboard = HeuristicReward(lambda x, y: {"X": 0.71, "Y": 0.63}[y["model"]], "leaderboard")
    assert _greedy(leaderboard, "selector", rows) == pytest.approx(2 / 6)


@pytest.mark.parametrize("seed", [0, 1])
def test_hint_generator_toy(seed: int) -> None:
    rows = [(q, {"hint": s}, {"hint": lg}, fs, fl) for q, s, lg, fs, fl in HINTS]
    pairs = _pairs("hint", rows)
    lrf = _trained("hint", "Hint generator: writes a hint for the answer generator", pairs, seed)
    assert _greedy(lrf, "hint", rows) == pytest.approx(0.81)
    assert _greedy(shorter_output_reward(), "hint", rows) == pytest.approx(0.42)
    # the aligned reward agrees with brevity on Q5 and overrides it elsewhere
    q5 = rows[4]
    s_short, s_long = lrf.score_batch(
        "hint", [({"question": q5[0]}, q5[1]), ({"question": q5[0]}, q5[2])]
    )
    assert s_short > s_long
