"""The reference's three worked toys (chapter 5) as runnable two-component systems.

Each toy is an upstream per-instance choice (passage A/B, model X/Y, hint short/long) followed by a
fixed downstream step whose global reward per query and option comes from the reference's table.
A naive local proxy (keyword overlap, a leaderboard constant, brevity) picks one option greedily;
an aligned strategy picks per query by the estimated downstream reward. The tables are the
reference's numbers; everything else is computed by running the systems.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coalign.component import FunctionComponent, Select
from coalign.data import Example
from coalign.runtime import Runtime
from coalign.system import System
from coalign.task import Task


@dataclass(frozen=True)
class Toy:
    name: str
    options: tuple[str, ...]
    proxy_name: str
    proxy: tuple[Mapping[str, float], ...]  # per query: option -> naive local score
    reward: tuple[Mapping[str, float], ...]  # per query: option -> downstream global reward

    def examples(self) -> list[Example]:
        return [Example(f"{self.name}-q{i + 1}",
                        {"query": f"query {i + 1}", "proxy": dict(p), "outcomes": dict(r)},
                        target=None)
                for i, (p, r) in enumerate(zip(self.proxy, self.reward, strict=True))]

    def task(self) -> Task:
        choose = Select("chooser", ["query", "proxy"], "picked", self.options,
                        description=f"picks one of {list(self.options)} for the query")
        downstream = FunctionComponent(
            "downstream", lambda x, c, ctx: {"score": x["outcomes"][x["picked"]]},
            ["picked", "outcomes"], ["score"], description="fixed downstream step")
        system = System(self.name, [choose, downstream], ["query", "proxy", "outcomes"], "score")
        return Task(system, lambda prediction, example: float(prediction), "reward")


class ProxySelector:
    """Greedy by the naive local metric shown in the chooser's ``proxy`` input."""

    def select(self, component: str, param: str, inputs: Mapping[str, Any],
               options: tuple[Any, ...], default: Any) -> Any:
        proxy = inputs["proxy"]
        return max(options, key=lambda o: (proxy[o], -options.index(o)))


class TableSelector:
    """Picks the option recorded for each query (e.g. by estimated downstream reward)."""

    def __init__(self, picks: Mapping[str, Any]) -> None:
        self._picks = dict(picks)

    def select(self, component: str, param: str, inputs: Mapping[str, Any],
               options: tuple[Any, ...], default: Any) -> Any:
        return self._picks.get(inputs["query"], default)


def mean_reward(task: Task, examples: Sequence[Example], runtime: Runtime) -> float:
    cfg = task.system.default_config()
    traces = [task.score(task.system.run(e.id, e.inputs, cfg, runtime), e) for e in examples]
    return sum(t.reward for t in traces) / len(traces)


def rollout_picks(task: Task, examples: Sequence[Example], runtime: Runtime) -> dict[str, Any]:
    """Per query, the option with strictly the best downstream reward; a tie gives no pick.

    Each option is run through the real system (downstream included); with no strict winner
    there is no preference to act on and the default stays, as in the reference's Q5.
    """
    chooser = task.system.component("chooser")
    options = chooser.params["option"].options
    picks: dict[str, Any] = {}
    for e in examples:
        rewards = {}
        for o in options:
            cfg = task.system.default_config().with_value("chooser", "option", o)
            rewards[o] = task.reward(task.system.run(e.id, e.inputs, cfg, runtime), e)
        best = max(rewards.values())
        winners = [o for o, r in rewards.items() if r == best]
        if len(winners) == 1:
            picks[e.inputs["query"]] = winners[0]
    return picks


RETRIEVER_TOY = Toy(
    "toy_retriever", ("A", "B"), "keyword overlap",
    proxy=({"A": 0.82, "B": 0.35}, {"A": 0.75, "B": 0.40}, {"A": 0.68, "B": 0.55},
           {"A": 0.90, "B": 0.20}),
    reward=({"A": 0.20, "B": 0.90}, {"A": 0.30, "B": 0.85}, {"A": 0.45, "B": 0.70},
            {"A": 0.10, "B": 0.95}),
)

MODEL_SELECTOR_TOY = Toy(
    "toy_model_selector", ("X", "Y"), "leaderboard score",
    proxy=tuple({"X": 0.71, "Y": 0.63} for _ in range(6)),
    reward=({"X": 1, "Y": 0}, {"X": 0, "Y": 1}, {"X": 0, "Y": 1}, {"X": 1, "Y": 0},
            {"X": 0, "Y": 0}, {"X": 0, "Y": 1}),
)

# Brevity: a short hint always scores higher on the proxy (fewer tokens).
HINT_TOY = Toy(
    "toy_hint", ("short", "long"), "brevity",
    proxy=tuple({"short": 1.0, "long": 0.0} for _ in range(5)),
    reward=({"short": 0.25, "long": 0.92}, {"short": 0.30, "long": 0.88},
            {"short": 0.70, "long": 0.75}, {"short": 0.20, "long": 0.85},
            {"short": 0.65, "long": 0.60}),
)

TOYS = {t.name: t for t in (RETRIEVER_TOY, MODEL_SELECTOR_TOY, HINT_TOY)}
