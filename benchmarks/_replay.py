"""What the replay benchmarks share: a table's greedy rewards as a ``Lookup``, and the
train / val / test split option of ``replay_compare``."""

from __future__ import annotations

import argparse
from pathlib import Path

from coalign.compare import Lookup
from coalign.tables import Table

SPLIT = [0.2, 0.3, 0.5]  # replay_compare's train / val / test fractions


def add_split_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split", type=float, nargs=3, default=SPLIT,
                        help="train / val / test fractions of the finished questions")


def greedy_lookup(directory: Path):
    """The table at ``directory``, its greedy rewards, and their ``Lookup``."""
    table = Table(directory)
    rewards = table.rewards("greedy")
    return table, rewards, Lookup.of_table(rewards, table.space)
