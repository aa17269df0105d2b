"""Test scores the run store holds for the configurations a run went through.

``Job.evaluate_test`` stores the test traces of the unoptimized and the final system, and
``Job.steps_on_test`` those of every accepted step: each under the tag ``test`` plus the
selectors in place, keyed by the config digest, with the config itself in the store's configs
(``runner.evaluate``). A ledger config is matched to its test traces by that stored config, so
no system name has to be guessed (a factory's ``System`` may be named unlike the run config's
``system``). A configuration counts only when every test example was scored: a killed
evaluation is no score.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coalign.errors import StoreError
from coalign.pairs import canonical_json
from coalign.store import RunStore
from coalign.trace import Trace

DIGEST_LEN = 64  # a config digest (sha256 hex) before the selectors' suffix of a trace key


@dataclass(frozen=True)
class StepTest:
    """An accepted step's test metric before and after it (``Job.steps_on_test``)."""

    step: int
    component: str
    param: str
    val_before: float | None
    val_after: float | None
    test_before: float
    test_after: float


@dataclass(frozen=True)
class StoredTests:
    """Test traces by trace key (config digest + selectors), and the digest of each config
    evaluated on test by its canonical JSON."""

    traces: Mapping[str, Sequence[Trace]]
    digests: Mapping[str, str]

    @classmethod
    def read(cls, store: RunStore, suffixes: Iterable[str]) -> StoredTests:
        """Every test trace under ``"test" + suffix`` for each selectors' suffix."""
        traces: dict[str, list[Trace]] = {}
        digests: dict[str, str] = {}
        for suffix in dict.fromkeys(suffixes):
            for t in store.traces("test" + suffix):
                traces.setdefault(t.config_digest + suffix, []).append(t)
        for digest in dict.fromkeys(k[:DIGEST_LEN] for k in traces):
            try:
                digests.setdefault(canonical_json(store.load_config(digest)), digest)
            except StoreError:  # traces of a config not saved with them: matched by name only
                continue
        return cls(traces, digests)


def mean_reward(traces: Sequence[Trace]) -> float:
    return sum(t.reward or 0.0 for t in traces) / len(traces)


def test_scores(stored: StoredTests, keys: Mapping[int, str],
                result: Mapping[str, Any] | None) -> dict[int, float]:
    """Step -> test metric of the system after that step (``keys``: its trace key), where
    stored whole; -1 is the unoptimized system (``result['before']``)."""
    out: dict[int, float] = {}
    before = (result or {}).get("before")
    if isinstance(before, int | float) and not isinstance(before, bool):
        out[-1] = float(before)
    size = (result or {}).get("test_size")
    for step, key in keys.items():
        traces = stored.traces.get(key)
        if traces and (not isinstance(size, int) or len(traces) == size):
            out[step] = mean_reward(traces)
    return out


def step_tests(rows: Sequence[Any], scores: Mapping[int, float]) -> tuple[StepTest, ...]:
    """Accepted steps (``StepRow``) whose test score before and after are both stored; before a
    step is after the previous accepted one, as ``Job.steps_on_test`` chains them."""
    out, prev = [], scores.get(-1)
    for r in rows:
        if not r.accepted:
            continue
        after = scores.get(r.step)
        if prev is not None and after is not None:
            out.append(StepTest(r.step, r.component, r.param, r.val_before, r.val_after,
                                prev, after))
        prev = after
    return tuple(out)


def val_groups(store: RunStore) -> dict[str, list[Trace]]:
    """Every stored validation trace by trace key, keys in the order first stored: the
    unoptimized system's first (the loop scores it before any step), then each accepted
    config's as it was accepted."""
    groups: dict[str, list[Trace]] = {}
    for t in store.traces("val"):
        groups.setdefault(t.config_digest, []).append(t)
    return groups
