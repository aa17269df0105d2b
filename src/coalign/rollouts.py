"""Monte-Carlo preference pairs for one component, labelled by downstream global reward.

For component k and input x: run the system once to fix the upstream outputs; draw n candidate
outputs of k (temperature samples, or alternative values of one of k's params); complete the
downstream m times per candidate (downstream sampled when m > 1, so its randomness is averaged)
and average the global reward. Every unordered pair of distinct candidates whose reward gap
exceeds the tie threshold becomes a preference pair; the rest are kept as ties.

Several specs for one component pool their candidates per input: a sampled output and the output
under an edited instruction are both estimates of the same downstream reward (only k's param
differs), so they are compared too, and an output drawn twice averages all its rewards. Outputs
of a per-instance choice (``choice_key``) are the choice alone, decided before k runs; they form
their own pool.

Everything goes through ``System.run_from`` and the runtime's LMs, so with the response cache a
repeated collection makes no LLM call: candidate i and downstream completion j always issue the
same requests (sample indices i and j).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.data import Example
from coalign.errors import ConfigError
from coalign.pairs import PreferencePair, canonical_json, label_for, to_jsonable
from coalign.runtime import Runtime, Sampling
from coalign.store import RunStore
from coalign.system import System
from coalign.task import Task
from coalign.trace import Step, Trace


@dataclass(frozen=True)
class RolloutSpec:
    """How candidates are drawn and rewards estimated.

    ``param``/``alternatives``: candidates are the component run under each alternative value of
    ``param`` (e.g. every retriever k, or candidate prompts); otherwise candidates are ``n``
    samples at ``temperature``. ``choice_key``: record the param value in the output (for
    per-instance choices, whose LRF ranks options before running them).
    """

    n: int = 4
    m: int = 1
    temperature: float = 0.9
    downstream_temperature: float = 0.7
    tie_threshold: float = 1e-9
    param: str | None = None
    alternatives: tuple[Any, ...] = ()
    choice_key: bool = False

    def __post_init__(self) -> None:
        if self.n < 2 and not self.alternatives:
            raise ConfigError("rollouts need n >= 2 candidates per input")
        if self.m < 1:
            raise ConfigError("rollouts need m >= 1 downstream completions per candidate")
        if self.tie_threshold < 0:
            raise ConfigError("tie_threshold must be >= 0")
        if bool(self.param) != bool(self.alternatives):
            raise ConfigError("give both param and alternatives, or neither")


@dataclass
class Candidate:
    output: dict[str, Any]
    rewards: list[float] = field(default_factory=list)

    @property
    def reward(self) -> float:
        return sum(self.rewards) / len(self.rewards)


@dataclass
class Collection:
    pairs: list[PreferencePair]
    ties: list[PreferencePair]
    account: CostAccount
    traces: list[Trace]

    @property
    def all(self) -> list[PreferencePair]:
        return self.pairs + self.ties


def collect_pairs(task: Task, component: str, examples: Sequence[Example], config: SystemConfig,
                  runtime: Runtime, spec: RolloutSpec | Sequence[RolloutSpec] = RolloutSpec(),
                  *, store: RunStore | None = None, tag: str = "stage1",
                  base_traces: dict[str, Trace] | None = None,
                  on_example: Callable[[Example], None] | None = None) -> Collection:
    """Preference pairs (and ties) for ``component`` on ``examples`` under ``config``; several
    specs pool their candidates per input (see the module docstring)."""
    system = task.system
    comp = system.component(component)
    specs = (spec,) if isinstance(spec, RolloutSpec) else tuple(spec)
    if not specs:
        raise ConfigError(f"no rollout spec given for component {component!r}")
    for sp in specs:
        if sp.param is not None and sp.param not in comp.params:
            raise ConfigError(f"component {component!r} has no param {sp.param!r}")
    downstream = sorted(system.descendants(component))
    account = CostAccount([c.name for c in system.components])
    pairs: list[PreferencePair] = []
    ties: list[PreferencePair] = []
    traces: list[Trace] = []

    def one(example: Example) -> tuple[list[PreferencePair], list[Trace]]:
        found: list[PreferencePair] = []
        ran: list[Trace] = []
        base = (base_traces or {}).get(example.id)
        if base is None:
            base = system.run(example.id, example.inputs, config, runtime)
            ran.append(base)
        pools: dict[str | None, tuple[list[RolloutSpec], dict[str, Candidate]]] = {}
        x_k: dict[str, Any] = {}
        for sp in specs:
            cands, x_k, run_traces = _candidates(task, comp.name, downstream, example, base,
                                                 config, runtime, sp)
            ran.extend(run_traces)
            group, merged = pools.setdefault(sp.param if sp.choice_key else None, ([], {}))
            group.append(sp)
            for key, cand in cands.items():
                merged.setdefault(key, Candidate(cand.output)).rewards.extend(cand.rewards)
        for group, merged in pools.values():
            n_drawn = sum(len(sp.alternatives) or sp.n for sp in group)
            threshold = min(sp.tie_threshold for sp in group)
            m = min(sp.m for sp in group)
            for a, b in itertools.combinations(merged.values(), 2):
                label = label_for(a.reward, b.reward, threshold)
                found.append(PreferencePair(component, example.id, x_k, a.output, b.output,
                                            a.reward, b.reward, label, n=n_drawn, m=m))
        return found, ran

    # inputs are independent: the runtime's executor runs them concurrently (threads, or with
    # model calls on Ray actors); results are gathered here, in input order
    for example, (found, ran) in zip(examples, runtime.map(one, examples), strict=True):
        for pair in found:
            (ties if pair.is_tie else pairs).append(pair)
        traces.extend(ran)
        if on_example is not None:
            on_example(example)
    account.add_traces(tag, traces)
    if store is not None:
        store.put_pairs(pairs + ties, tag=tag)
    return Collection(pairs, ties, account, traces)


def _candidates(task: Task, component: str, downstream: list[str], example: Example,
                base: Trace, config: SystemConfig, runtime: Runtime,
                spec: RolloutSpec) -> tuple[dict[str, Candidate], dict[str, Any], list[Trace]]:
    system = task.system
    by_output: dict[str, Candidate] = {}
    traces: list[Trace] = []
    x_k: dict[str, Any] = {}
    draws = spec.alternatives or tuple(range(spec.n))
    if spec.param is not None and (component, spec.param) in runtime.selectors:
        # the alternatives are what is compared: a selector in place would override each of
        # them with its own pick, leaving one candidate and no pair
        runtime = dataclasses.replace(runtime, selectors={
            k: v for k, v in runtime.selectors.items() if k != (component, spec.param)})
    settings = []
    for i, draw in enumerate(draws):
        if spec.param is not None:
            settings.append((config.with_value(component, spec.param, draw), None))
        else:
            settings.append((config, Sampling(spec.temperature, i)))
    # Draw every candidate of k back to back before any downstream call: consecutive requests
    # share k's whole prompt, which a prefix-reusing backend evaluates once, not once per draw.
    own_steps = _draw_candidates(system, component, base, runtime, settings)
    for (cfg, own), draw, own_step in zip(settings, draws, own_steps, strict=True):
        output: dict[str, Any] | None = None
        for j in range(spec.m):
            sampling = {component: own} if own is not None else {}
            if spec.m > 1:  # average over downstream randomness
                sampling.update({d: Sampling(spec.downstream_temperature, j) for d in downstream})
            if own_step is None:
                trace = system.run_from(component, base, cfg, runtime, sampling=sampling)
            else:
                trace = _run_downstream(system, component, base, own_step, cfg, runtime,
                                        sampling, first=j == 0)
            trace = task.score(trace, example)
            traces.append(trace)
            step = trace.step(component)
            x_k = step.inputs
            if output is None:
                # a per-instance choice is made before k runs: its "output" is the option alone,
                # the form the selector scores at inference
                output = to_jsonable(
                    {f"@{spec.param}": step.choices.get(spec.param, draw)}
                    if spec.choice_key and spec.param is not None else dict(step.outputs))
            key = canonical_json(output)
            by_output.setdefault(key, Candidate(output)).rewards.append(float(trace.reward))
    return by_output, to_jsonable(x_k), traces


def _draw_candidates(system: System, component: str, base: Trace, runtime: Runtime,
                     settings: list[tuple[SystemConfig, Sampling | None]]) -> list[Step | None]:
    """k's step under each setting, or ``None`` each where k must re-run inside ``run_from``
    (loops may visit k several times; a skipped k has no inputs to replay)."""
    step = base.step(component)
    if system.loops or step.skipped:
        return [None] * len(settings)
    return [system.run_component(component, step.inputs, cfg, runtime,
                                 example_id=base.example_id, sampling=own)
            for cfg, own in settings]


def _run_downstream(system: System, component: str, base: Trace, own_step: Step,
                    config: SystemConfig, runtime: Runtime, sampling: dict[str, Sampling],
                    *, first: bool) -> Trace:
    """The run with k's output replaced by ``own_step``: only k's descendants execute. The
    first completion carries k's execution (and its cost); later ones reuse it."""
    seeded = Trace(base.example_id, config.digest, dict(base.inputs),
                   [own_step if s.key == own_step.key else s for s in base.steps])
    trace = system.run_after(component, seeded, config, runtime, sampling=sampling)
    if first:
        trace.steps = [own_step if s.key == own_step.key else s for s in trace.steps]
    return trace
