"""A two-component toy whose best option differs per input: the query names the word to pick.

The local reward learns it from the cheap ``out_in_query`` feature, so the loop proposes and
accepts a per-instance LRF selector on its first step: the smallest run with a selector in it.
No LLM is involved.
"""

from __future__ import annotations

from pathlib import Path

import torch

from coalign.component import FunctionComponent, Select
from coalign.data import Example
from coalign.optimize import LoopSettings, Optimizer
from coalign.rewards import HashingBackbone, LocalRewardModel
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.system import System
from coalign.task import Task

WORDS = ("alpha", "beta")


def selector_task(model: str = "") -> Task:
    choose = Select("chooser", ["query"], "picked", WORDS, description="picks a word")
    score = FunctionComponent("score", lambda x, c, ctx: {"score": _hit(x)}, ["picked", "query"],
                              ["score"], description="scores the pick")
    return Task(System("selector_toy", [choose, score], ["query"], "score"),
                lambda prediction, example: float(prediction), "hit")


def _hit(x: dict) -> float:
    return float(x["picked"] in x["query"])


def examples(prefix: str, n: int) -> list[Example]:
    return [Example(f"{prefix}{i}", {"query": f"please use {WORDS[i % 2]} for item {i}"}, 1.0)
            for i in range(n)]


def selector_loop(run_dir: Path, iterations: int = 1, **settings: object) -> Optimizer:
    reward = LocalRewardModel(HashingBackbone(64), {"chooser": "picks a word"})
    settings = LoopSettings(**{"proposals": "local", "iterations": iterations, "search_size": 4,
                               "fresh_inputs": 4, "rollout_n": 0, "seed": 0, **settings})
    return Optimizer(selector_task(), examples("t", 8), examples("v", 6), Runtime(),
                     RunStore(run_dir), reward, settings)


def flip(reward: LocalRewardModel, component: str = "chooser") -> None:
    """Reverse the head's ranking in place: what a stage-2 adaptation that learned the opposite
    would do to a selector reading the live reward."""
    with torch.no_grad():
        for p in reward.heads[component].parameters():
            p.neg_()
