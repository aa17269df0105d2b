"""``System``: a DAG of components with dynamic routing, full and partial (prefix-cached) runs.

Edges are implied by field names: a component that reads field ``f`` depends on the unique
component (or system input) that writes ``f``. Dynamic routing comes in two forms: a component's
``when`` predicate switches its incoming edges off for some inputs, and a ``Loop`` routes control
back from a later component to an earlier one while a condition holds, unrolled up to a bound.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from time import perf_counter
from typing import Any

from coalign.component import Component
from coalign.config import SystemConfig
from coalign.errors import ConfigError, GraphError
from coalign.params import Choice
from coalign.runtime import RunContext, Runtime, Sampling
from coalign.trace import Step, Trace


@dataclass(frozen=True)
class Loop:
    """After ``source`` runs, jump back to ``target`` while ``when(fields)`` holds.

    At most ``max_iters`` extra passes per example. ``carry`` names fields written downstream
    and read upstream on the next pass (readers must list them in ``optional_inputs``).
    """

    source: str
    target: str
    when: Callable[[Mapping[str, Any]], bool]
    max_iters: int = 1
    carry: tuple[str, ...] = ()


class System:
    def __init__(self, name: str, components: Sequence[Component], inputs: Sequence[str],
                 output: str, *, loops: Sequence[Loop] = ()) -> None:
        self.name = name
        self.components = list(components)
        self.inputs = tuple(inputs)
        self.output = output
        self.loops = list(loops)
        self._by_name: dict[str, Component] = {}
        for comp in self.components:
            if comp.name in self._by_name:
                raise GraphError(f"duplicate component name {comp.name!r}")
            self._by_name[comp.name] = comp
        self._producer = self._producers()
        self._parents = self._edges()
        self.order = self._toposort()
        self._position = {name: i for i, name in enumerate(self.order)}
        self._check_loops()
        self._ordered = [self._by_name[n] for n in self.order]
        self._carried = tuple(dict.fromkeys(f for loop in self.loops for f in loop.carry))
        if output not in self._producer:
            raise GraphError(f"system output field {output!r} is produced by no component")
        self._children = self._child_map()

    # -- construction-time validation -------------------------------------------------------

    def _producers(self) -> dict[str, str]:
        producer = {f: "<input>" for f in self.inputs}
        for comp in self.components:
            for f in comp.outputs:
                if f in producer:
                    raise GraphError(f"field {f!r} is written by both {producer[f]!r} and "
                                     f"{comp.name!r}; each field needs one writer")
                producer[f] = comp.name
        return producer

    def _edges(self) -> dict[str, set[str]]:
        carried = {f for loop in self.loops for f in loop.carry}
        parents: dict[str, set[str]] = {}
        for comp in self.components:
            parents[comp.name] = set()
            for f in comp.inputs + comp.optional_inputs:
                if f not in self._producer:
                    raise GraphError(f"component {comp.name!r} reads field {f!r} that no "
                                     f"component or system input provides")
                if f in carried and f in comp.optional_inputs:
                    continue  # a loop-carried value: a back-edge, not a dependency
                if f in carried:
                    raise GraphError(f"component {comp.name!r} reads loop-carried field {f!r}: "
                                     "declare it in optional_inputs")
                src = self._producer[f]
                if src == comp.name:
                    raise GraphError(f"component {comp.name!r} reads its own output {f!r}")
                if src != "<input>":
                    parents[comp.name].add(src)
        return parents

    def _toposort(self) -> list[str]:
        # Nodes go in first in declaration order, then their edges, so graphlib lists ready
        # nodes, and each node's children, in declaration order; taking them one at a time from
        # a FIFO keeps the order replay tables and fingerprints were made with.
        sorter: TopologicalSorter[str] = TopologicalSorter()
        for c in self.components:
            sorter.add(c.name)
        for c in self.components:
            sorter.add(c.name, *sorted(self._parents[c.name]))
        try:
            sorter.prepare()
            cyclic = False
        except CycleError:  # graphlib still hands out every node upstream of the cycle
            cyclic = True
        ready, order = deque(sorter.get_ready()), []
        while ready:
            name = ready.popleft()
            order.append(name)
            sorter.done(name)
            ready.extend(sorter.get_ready())
        if cyclic:
            stuck = sorted({c.name for c in self.components} - set(order))
            raise GraphError(f"cycle among components {stuck}; use a Loop for routing back")
        return order

    def _check_loops(self) -> None:
        for loop in self.loops:
            for end in (loop.source, loop.target):
                if end not in self._by_name:
                    raise GraphError(f"loop refers to unknown component {end!r}")
            if self._position[loop.target] > self._position[loop.source]:
                raise GraphError(f"loop {loop.source!r} -> {loop.target!r} must route back to an "
                                 "earlier component")
            if loop.max_iters < 0:
                raise GraphError(f"loop {loop.source!r} -> {loop.target!r}: max_iters must be >= 0")

    def _child_map(self) -> dict[str, set[str]]:
        children: dict[str, set[str]] = {n: set() for n in self._by_name}
        for child, parents in self._parents.items():
            for p in parents:
                children[p].add(child)
        for loop in self.loops:  # back-edges: a loop body re-runs from its target
            children[loop.source].add(loop.target)
        return children

    # -- queries ------------------------------------------------------------------------------

    def component(self, name: str) -> Component:
        try:
            return self._by_name[name]
        except KeyError:
            raise GraphError(f"unknown component {name!r}; system {self.name!r} has "
                             f"{self.order}") from None

    def descendants(self, name: str) -> set[str]:
        """Components whose inputs depend (transitively, loops included) on ``name``."""
        self.component(name)
        seen: set[str] = set()
        stack = [name]
        while stack:
            for child in self._children[stack.pop()]:
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
        seen.discard(name)
        return seen

    def default_config(self) -> SystemConfig:
        return SystemConfig(self, {})

    def set_defaults(self, values: Mapping[str, Mapping[str, Any]]) -> None:
        """Make ``values`` (component -> param -> JSON value) the starting configuration, e.g.
        a user's own prompt for a ready-made system. All are checked before any is applied."""
        parsed: dict[tuple[str, str], Any] = {}
        for comp_name, params in values.items():
            specs = self.component(comp_name).params
            for pname, raw in params.items():
                if pname not in specs:
                    raise GraphError(f"unknown param {pname!r} of component {comp_name!r}; "
                                     f"it has {sorted(specs) or 'none'}")
                try:
                    parsed[comp_name, pname] = specs[pname].from_json(raw)
                except ConfigError as exc:
                    raise ConfigError(f"{comp_name}.{pname}: {exc}") from None
        for (comp_name, pname), value in parsed.items():
            self.component(comp_name).params[pname].default = value

    def set_per_instance(self, slots: Sequence[str]) -> None:
        """Make each ``component.param`` (a ``Choice``) chosen per input at inference instead of
        once for all inputs, e.g. a retriever's k on a system built with a global one. All are
        checked before any is changed."""
        specs = []
        for slot in slots:
            comp_name, _, pname = slot.partition(".")
            spec = self.component(comp_name).params.get(pname)
            if not isinstance(spec, Choice):
                kind = "no such param" if spec is None else f"a {spec.kind} param"
                raise ConfigError(f"per-instance {slot!r}: {kind}; only a Choice param "
                                  "(component.param) can be chosen per input")
            specs.append(spec)
        for spec in specs:
            spec.scope = "per_instance"

    def config(self, values: Mapping[str, Mapping[str, Any]]) -> SystemConfig:
        return SystemConfig(self, values)

    # -- execution ----------------------------------------------------------------------------

    def run(self, example_id: str, inputs: Mapping[str, Any], config: SystemConfig,
            runtime: Runtime, *, sampling: Mapping[str, Sampling] | None = None) -> Trace:
        """Run every component in topological order over the active edges."""
        return self._execute(example_id, inputs, config, runtime, None, set(), sampling or {})

    def run_from(self, component: str, trace: Trace, config: SystemConfig, runtime: Runtime, *,
                 sampling: Mapping[str, Sampling] | None = None) -> Trace:
        """Re-run ``component`` and everything downstream; reuse ``trace`` for the rest.

        Equals a full ``run`` under ``config`` provided ``config`` differs from the trace's only
        in ``component`` and its descendants.
        """
        dirty = self.descendants(component) | {component}
        return self._execute(trace.example_id, trace.inputs, config, runtime, trace, dirty,
                             sampling or {})

    def run_after(self, component: str, trace: Trace, config: SystemConfig, runtime: Runtime, *,
                  sampling: Mapping[str, Sampling] | None = None) -> Trace:
        """Re-run only what is downstream of ``component``, keeping its step from ``trace``
        (e.g. a candidate output drawn separately by rollouts)."""
        return self._execute(trace.example_id, trace.inputs, config, runtime, trace,
                             self.descendants(component), sampling or {})

    def run_batch(self, items: Iterable[tuple[str, Mapping[str, Any]]], config: SystemConfig,
                  runtime: Runtime) -> list[Trace]:
        """Run many examples with the runtime's executor; results keep the input order."""
        return list(runtime.map(lambda it: self.run(it[0], it[1], config, runtime), items))

    def run_component(self, component: str, inputs: Mapping[str, Any], config: SystemConfig,
                      runtime: Runtime, *, example_id: str = "",
                      sampling: Sampling | None = None) -> Step:
        """Execute one component alone on recorded inputs x_k (local optimization's unit)."""
        comp = self.component(component)
        return self._step(comp, 0, example_id, dict(inputs), config, runtime, sampling)

    def _execute(self, example_id: str, inputs: Mapping[str, Any], config: SystemConfig,
                 runtime: Runtime, cached: Trace | None, dirty: set[str],
                 sampling: Mapping[str, Sampling]) -> Trace:
        try:
            fields: dict[str, Any] = {f: inputs[f] for f in self.inputs}
        except KeyError:
            missing = [f for f in self.inputs if f not in inputs]
            raise GraphError(f"example {example_id!r} lacks system input field(s) "
                             f"{missing}") from None
        for f in self._carried:
            fields.setdefault(f, None)
        trace = Trace(example_id, config.digest, dict(fields))
        steps = trace.steps
        reuse = {s.key: s for s in cached.steps} if cached is not None else None
        if not self.loops:  # the common straight DAG: no visit counting or loop routing
            for comp in self._ordered:
                step = (self._reused(reuse, comp.name, 0, dirty) if reuse is not None else None)
                if step is None:
                    step = self._step(comp, 0, example_id, fields, config, runtime,
                                      sampling.get(comp.name) if sampling else None)
                steps.append(step)
                fields.update(step.outputs)
            trace.state = fields
            return trace
        visits: dict[str, int] = {}
        loop_iters = [0] * len(self.loops)
        i = 0
        while i < len(self._ordered):
            comp = self._ordered[i]
            visit = visits.get(comp.name, 0)
            visits[comp.name] = visit + 1
            step = self._reused(reuse, comp.name, visit, dirty) if reuse is not None else None
            if step is None:
                step = self._step(comp, visit, example_id, fields, config, runtime,
                                  sampling.get(comp.name))
            steps.append(step)
            fields.update(step.outputs)
            i = self._next_position(i, comp.name, fields, loop_iters)
        trace.state = fields
        return trace

    @staticmethod
    def _reused(reuse: Mapping[tuple[str, int], Step], name: str, visit: int,
                dirty: set[str]) -> Step | None:
        """A copy of the cached step, unless the component must re-run."""
        old = reuse.get((name, visit))
        if old is None or name in dirty:
            return None
        return Step(name, visit, dict(old.inputs), dict(old.outputs), skipped=old.skipped,
                    reused=True, usage=old.usage, choices=dict(old.choices))

    def _step(self, comp: Component, visit: int, example_id: str, fields: dict[str, Any],
              config: SystemConfig, runtime: Runtime, sampling: Sampling | None) -> Step:
        x = {f: fields[f] for f in comp.inputs}
        if comp.optional_inputs:
            x.update({f: fields.get(f) for f in comp.optional_inputs})
        if comp.conditional and not comp.active(fields):
            return Step(comp.name, visit, x, dict.fromkeys(comp.outputs), skipped=True)
        ctx = RunContext(runtime, comp.name, example_id, visit, sampling)
        t0 = perf_counter()
        y = comp(dict(x), config[comp.name], ctx)
        return Step(comp.name, visit, x, y, False, False, perf_counter() - t0, ctx.usage,
                    ctx.choices)

    def _next_position(self, i: int, name: str, fields: Mapping[str, Any],
                       loop_iters: list[int]) -> int:
        for j, loop in enumerate(self.loops):
            if loop.source == name and loop_iters[j] < loop.max_iters and loop.when(fields):
                loop_iters[j] += 1
                return self._position[loop.target]
        return i + 1
