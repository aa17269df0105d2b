import pytest

from coalign.runtime import Runtime
from coalign.systems import (
    HINT_TOY,
    MODEL_SELECTOR_TOY,
    RETRIEVER_TOY,
    ProxySelector,
    TableSelector,
    mean_reward,
    rollout_picks,
)


@pytest.mark.parametrize("toy,naive,aligned", [(RETRIEVER_TOY, 0.2625, 0.85),
                                               (MODEL_SELECTOR_TOY, 1 / 3, 5 / 6),
                                               (HINT_TOY, 0.42, 0.81)])
def test_toy_greedy_strategies_reproduce_reference(toy, naive, aligned):
    task, examples = toy.task(), toy.examples()
    key = ("chooser", "option")
    proxy = Runtime(selectors={key: ProxySelector()})
    assert mean_reward(task, examples, proxy) == pytest.approx(naive)
    picks = rollout_picks(task, examples, Runtime())
    assert mean_reward(task, examples, Runtime(selectors={key: TableSelector(picks)})) == \
        pytest.approx(aligned)


def test_model_selector_q5_has_no_preference():
    picks = rollout_picks(MODEL_SELECTOR_TOY.task(), MODEL_SELECTOR_TOY.examples(), Runtime())
    assert "query 5" not in picks and len(picks) == 5
    assert picks["query 1"] == "X" and picks["query 2"] == "Y"


def test_hint_toy_aligned_agrees_with_brevity_on_q5():
    picks = rollout_picks(HINT_TOY.task(), HINT_TOY.examples(), Runtime())
    assert picks["query 5"] == "short"
    assert [picks[f"query {i}"] for i in range(1, 5)] == ["long"] * 4
