"""A replay table's pinned step outcomes as the outcome log a ``Runtime`` reads
(``coalign.runtime.OutcomeLog``).

Most steps of a tabled system are pure functions of their inputs and replay live. A sandboxed
test run is not: code that runs near a time limit can stop at the per-test limit on one run and
at the run's CPU limit on the next, and the feedback text, which the next LLM request quotes,
differs. The table keeps the outcome its build saw, so that a replay asks the requests the
table holds.
"""

from __future__ import annotations

import threading
from typing import Any

from coalign.tables._shards import Outcome, ShardSet


class TableOutcomes:
    """The table's pinned outcomes. ``write``: a build's log, whose new outcomes are appended
    to the table; otherwise a new outcome (a question the table has not pinned) is remembered
    for this process only, as an unpinned table replayed before."""

    def __init__(self, shards: ShardSet, *, write: bool = False) -> None:
        self.shards = shards
        self.write = write
        self._memo: dict[str, Any] = {}

    def get(self, key: str) -> Any | None:
        found = self.shards.outcomes.get(key)
        return found.value if found is not None else self._memo.get(key)

    def put(self, key: str, value: Any, component: str, question: str) -> None:
        if self.write:
            self.shards.append_outcome(key, Outcome(value, component, question))
        else:
            self._memo[key] = value


class PendingOutcomes:
    """Outcomes of one walk of a question, held back until the walk proves them right (every
    request it made is in the table); ``commit`` appends them."""

    def __init__(self, shards: ShardSet) -> None:
        self.shards = shards
        self.new: dict[str, Outcome] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Any | None:
        found = self.shards.outcomes.get(key) or self.new.get(key)
        return found.value if found is not None else None

    def put(self, key: str, value: Any, component: str, question: str) -> None:
        with self._lock:
            self.new.setdefault(key, Outcome(value, component, question))

    def commit(self) -> None:
        for key, outcome in self.new.items():
            self.shards.append_outcome(key, outcome)
