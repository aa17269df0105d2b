"""What every local optimizer promises the loop (``optimize._base``), as pytest tests.

A local optimizer is a ranker: given a read-only ``LocalView`` it returns the values it compared
with their mean local rewards (``propose``), and ``pick`` turns that list, with the loop's marks
of which values are still open, into one value; the current value means "no change". The
contract:

* every value it ranks is in the param's space (``Param.validate`` accepts it; it round-trips
  through JSON), and the current value is among them (the loop compares against it);
* the same seeded view gives the same ranking and pick (runs are reproducible from their seed);
* the view's config, search inputs and current value are left as they were (only the output
  memo grows);
* it spends only its budget: it runs its own component on the search inputs, charged to the
  ``local_search`` phase, at most ``max_runs`` times per input, and never the rest of the system;
* an empty search sample gives a valid value without running anything;
* what it picks is among the candidates it ranked (the ledger's "why");
* it never picks a value the loop marked closed (rejected by the gate under this config).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pytest

from coalign.errors import ConfigError
from coalign.optimize import BaseLocalOptimizer, LocalView, LoopSettings, ParamKind
from coalign.pairs import canonical_json, to_jsonable


class ContextFactory(Protocol):
    def __call__(self, seed: int, *, empty: bool = False) -> LocalView:
        """A fresh view for the kind's toy param (``empty``: no search inputs)."""
        ...


@dataclass(frozen=True)
class OptimizerCase:
    """One optimizer under test: how to build it and contexts for a param of its kind."""

    id: str  # "kind/name"
    build: Callable[[], BaseLocalOptimizer]
    context: ContextFactory
    max_runs: int | None = None  # component executions per search input it may spend
    # contract test name -> why this optimizer does not meet it yet: run as a strict xfail,
    # so the gap stays visible and the mark must go once it is closed
    known_gaps: Mapping[str, str] = field(default_factory=dict)


def optimizer_cases(kinds: Mapping[str, ParamKind], settings: LoopSettings,
                    contexts: Mapping[str, ContextFactory],
                    max_runs: Mapping[str, int] | None = None,
                    known_gaps: Mapping[str, Mapping[str, str]] | None = None) -> list[Any]:
    """A ``pytest.param`` per optimizer of every kind in ``kinds``, built from ``settings``.
    ``contexts`` must cover every kind: a registered kind without one is an error, not a gap.
    ``max_runs`` and ``known_gaps`` are keyed by case id (``"text/opro"``)."""
    missing = sorted(set(kinds) - set(contexts))
    if missing:
        raise ConfigError(f"optimizer_cases: no context factory for param kind(s) {missing}; "
                         "give one per registered kind")
    out = []
    for kind in sorted(kinds):
        for name, build in sorted(kinds[kind].optimizers.items()):
            case_id = f"{kind}/{name}"
            case = OptimizerCase(case_id, lambda b=build: b(settings), contexts[kind],
                                 (max_runs or {}).get(case_id),
                                 dict((known_gaps or {}).get(case_id, {})))
            out.append(pytest.param(case, id=case_id))
    return out


def key(value: Any) -> str:
    return canonical_json(to_jsonable(value))


def choose(optimizer: BaseLocalOptimizer, view: LocalView,
           rejected: frozenset[str] = frozenset()) -> Any:
    """What the optimizer proposes on ``view`` when the values keyed in ``rejected`` are closed:
    its ranking, then its pick (the loop's expand and filter, without coupled variants)."""
    scored = optimizer.propose(view)
    return optimizer.pick(scored, [key(v) not in rejected for v, _ in scored], view.current,
                          view.rng)


def _spec(ctx: LocalView) -> Any:
    return ctx.task.system.component(ctx.component).params[ctx.param]


def _frozen(ctx: LocalView) -> tuple[Any, ...]:
    return (ctx.config.digest, copy.deepcopy(list(ctx.search)), key(ctx.current),
            ctx.component, ctx.param)


class LocalOptimizerContract:
    """Subclass it and provide a ``case`` fixture returning an ``OptimizerCase``."""

    @pytest.fixture
    def case(self) -> OptimizerCase:
        raise NotImplementedError("provide a `case` fixture (see optimizer_cases)")

    @pytest.fixture(autouse=True)
    def _known_gap(self, request: pytest.FixtureRequest, case: OptimizerCase) -> None:
        reason = case.known_gaps.get(request.node.originalname)
        if reason:
            request.applymarker(pytest.mark.xfail(strict=True, reason=reason))

    def test_ranks_values_of_its_params_space_the_current_one_included(
            self, case: OptimizerCase) -> None:
        ctx = case.context(0)
        scored = case.build().propose(ctx)
        spec = _spec(ctx)
        for value, reward in scored:
            assert key(spec.validate(value)) == key(value)
            assert key(spec.from_json(spec.to_json(value))) == key(value)
            assert isinstance(reward, float)
        assert key(ctx.current) in {key(v) for v, _ in scored}

    def test_same_seed_same_ranking_and_pick(self, case: OptimizerCase) -> None:
        first = case.build().propose(case.context(3))
        again = case.build().propose(case.context(3))
        assert [(key(v), r) for v, r in again] == [(key(v), r) for v, r in first]
        assert key(choose(case.build(), case.context(3))) == \
            key(choose(case.build(), case.context(3)))

    def test_leaves_its_view_as_it_was(self, case: OptimizerCase) -> None:
        ctx = case.context(0)
        before = _frozen(ctx)
        choose(case.build(), ctx)
        assert _frozen(ctx) == before

    def test_runs_only_its_component_on_the_search_sample(self, case: OptimizerCase) -> None:
        ctx = case.context(0)
        choose(case.build(), ctx)
        executed = {phase: dict(c) for phase, c in ctx.account.executed.items() if c}
        assert set(executed) <= {"local_search"}
        runs = executed.get("local_search", {})
        assert set(runs) <= {ctx.component}
        if case.max_runs is not None:
            assert runs.get(ctx.component, 0) <= case.max_runs * len(ctx.search)

    def test_an_empty_search_sample_gives_a_valid_value(self, case: OptimizerCase) -> None:
        ctx = case.context(0, empty=True)
        value = choose(case.build(), ctx)
        assert key(_spec(ctx).validate(value)) == key(value)
        assert not any(ctx.account.executed.values())

    def test_its_pick_is_among_the_candidates_it_ranked(self, case: OptimizerCase) -> None:
        ctx = case.context(0)
        optimizer = case.build()
        scored = optimizer.propose(ctx)
        value = optimizer.pick(scored, [True] * len(scored), ctx.current, ctx.rng)
        assert key(value) != key(ctx.current), "the case's view must leave room to improve"
        assert key(value) in {key(v) for v, _ in scored}

    def test_a_value_marked_closed_is_not_picked(self, case: OptimizerCase) -> None:
        first = choose(case.build(), case.context(0))
        assert key(first) != key(case.context(0).current), \
            "the case's view must leave room to improve"
        again = choose(case.build(), case.context(0), rejected=frozenset({key(first)}))
        assert key(again) != key(first)
