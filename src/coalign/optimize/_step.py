"""One iteration of the loop as one function: draw → expand → filter → pick → validate.

``step`` reads where the run stands (``Position``: config, selectors, validation traces,
rejections, reward) and what it runs with (``StepEnv``), and returns an ``Outcome``; it writes
nothing but the cost account and the response cache (a proposed selector's frozen reward is
kept in memory until the loop saves an accepted one). The loop commits the outcome (adapts the
reward after an accepted step, remembers a rejection) and the ledger stores it. Every rule beyond
Algorithm 1 that acts within a step is applied here, numbered as in docs/optimize.md:

1-2  draw only components with a local reward that ranks held-out pairs above chance (``draw``)
3    the search sample is a window moving through the train split (``search_sample``)
4    a proposal the gate rejected under this config is not validated again (``closed``)
5    text: a value with a rejected value's search outputs counts as rejected (``closed``)
6    coupled: a switched choice also comes with its tuned siblings reset (``expand``, ``variant``)
7    per instance: the LRF selector, a global option, or no change (``expand_per_instance``)
15   a value is proposed only if it beats the current one (``BaseLocalOptimizer.pick``)
16   validation may stop early on a clearly worse candidate (``validate``, ``Gate``)
19   a finite slot that proposed no change on every train input is not drawn again (``settled``)
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.data import Example
from coalign.optimize._base import BaseLocalOptimizer, LocalView, Scored, value_key
from coalign.optimize._carry import continues, latest, with_carry
from coalign.optimize._choice import SELECTOR, cost_penalized, option_scores, per_instance_proposal
from coalign.optimize._coupled import at_start, best_variant, tuned_siblings, variants
from coalign.optimize._exact import ExactReward, exact_components, has_reward
from coalign.optimize._kinds import ParamKind
from coalign.optimize._outcome import Outcome, Proposal, StepState, tried
from coalign.optimize._portfolio import Validated, axes_of, better
from coalign.optimize._position import Position
from coalign.optimize._selectors import FrozenRewards, Policies, policy_suffix
from coalign.optimize._settings import LoopSettings, window
from coalign.optimize._text import rollout_winners
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.task import Task
from coalign.trace import Trace


@dataclass(frozen=True)
class StepEnv:
    """What every step runs with; fixed for a run."""

    task: Task
    train: Sequence[Example]
    val: Sequence[Example]
    settings: LoopSettings
    optimizers: Mapping[str, BaseLocalOptimizer]
    targets: Sequence[tuple[str, str]]  # (component, param) the loop may draw
    store: RunStore
    account: CostAccount
    frozen: FrozenRewards
    runtime_for: Callable[[Policies], Runtime]

    @functools.cached_property
    def exact(self) -> frozenset[str]:
        """The targets whose local reward is the task metric (``_exact``)."""
        return exact_components(self.task.system, self.targets, self.settings.terminal_reward)


def trace_key(config: SystemConfig, policies: Policies) -> str:
    """What names a config's stored validation traces: its digest and its selectors."""
    return config.digest + policy_suffix(policies)


def step(t: int, env: StepEnv, at: Position) -> Outcome:
    rng = random.Random(f"{env.settings.seed}:step:{t}")
    drawn = draw(env, at, rng)
    if isinstance(drawn, Outcome):
        return drawn
    component, param = drawn
    spec = env.task.system.component(component).params[param]
    kind = env.settings.kinds[spec.kind]
    sample = search_sample(env, at, component, t)
    search = [x for _, x in sample]
    if component in env.exact:
        at = dataclasses.replace(at, reward=ExactReward(env.task, component, sample, at.reward))
    expanded = (expand_per_instance(env, at, component, param, kind, search, rng)
                if spec.scope == "per_instance"
                else expand(env, at, component, param, kind, search, rng))
    out = expanded if isinstance(expanded, Outcome) else judged(env, at, component, param,
                                                                 *expanded)
    if continues(env.exact, component, kind.network):
        out = with_carry(out, spec, at.config[component][param])
    return out


def judged(env: StepEnv, at: Position, component: str, param: str, proposal: Proposal,
           candidates: Sequence[Scored] = (),
           scored_variants: Sequence[tuple[tuple[str, ...], float]] = (), *,
           early: bool = True) -> Outcome:
    """The proposal validated (re-run from ``component`` on) and put to the gate: a strictly
    higher summed validation reward (``Gate``), or with ``proposals: portfolio`` a higher
    expected validation score under the score model (``_portfolio.better``). ``early``: the
    gate may stop a clearly worse candidate's validation (rule 16)."""
    traces = validate(env, at, component, proposal, early)
    checked = [e for e in env.val if e.id in traces]
    new = [traces[e.id].reward or 0.0 for e in checked]
    old = [at.val_traces[e.id].reward or 0.0 for e in checked]
    complete = len(checked) == len(env.val)
    gate = env.settings.gate
    costs = [traces[e.id].cost_s() for e in checked]
    if not complete or not gate.within_cap(costs):
        accepted = False
    elif env.settings.proposals == "portfolio" and not proposal.policies and not at.policies:
        axes = axes_of(env.task.system, env.targets, env.settings.kinds, {})
        accepted = better(axes, at.validated, at.config,
                          Validated(proposal.config, tuple(new), sum(costs) / len(costs)))
    else:
        accepted = gate.accept(new, old)
    # stopped early: the full-set estimate is the current score plus the paired difference
    after = (sum(new) / len(checked) if complete
             else at.score + (sum(new) - sum(old)) / len(checked))
    state = (StepState.ACCEPTED if accepted else StepState.REJECTED if complete
             else StepState.STOPPED_EARLY)
    return Outcome(component, param, state, at.score, proposal.value, after=after,
                   reset=proposal.reset, checked=len(checked), candidates=candidates,
                   variants=scored_variants, proposal=proposal, traces=traces,
                   val_rewards=tuple(new) if complete else (),
                   val_cost=sum(costs) / len(costs) if complete and costs else 0.0)


def draw(env: StepEnv, at: Position, rng: random.Random) -> tuple[str, str] | Outcome:
    """A (component, param) among the components worth drawing. One scored by the task metric
    (``_exact``) always is. One whose stage-1 pairs were all ties has no local reward yet, and
    one whose reward ranked held-out pairs no better than chance would pick candidates by
    noise: draw among the others (adaptation may add a head later) and spend no validation on
    them."""
    names = sorted({c for c, _ in env.targets})
    exact = env.exact
    scorable = [c for c in names if has_reward(at.reward, c, exact)]
    ready = [c for c in scorable if c in exact or aligned(env, c)]
    if not ready:
        s = env.settings
        reason = (f"no local reward ranks held-out pairs above {s.min_alignment:g}"
                  if scorable else "no local reward yet: every stage-1 pair was a tie")
        return Outcome(names[0], env.targets[0][1], StepState.NO_REWARD, at.score,
                       reason=reason)
    slots = [(c, p) for c, p in env.targets if c in ready and not settled(env, at, c, p)]
    if not slots:
        return Outcome(ready[0], next(p for c, p in env.targets if c == ready[0]),
                       StepState.SETTLED, at.score)
    component = rng.choice([c for c in ready if any(c == d for d, _ in slots)])
    return component, rng.choice([p for c, p in slots if c == component])


def settled(env: StepEnv, at: Position, component: str, param: str) -> bool:
    """A slot with a finite set of values whose search windows proposed no change on every
    train input under this config and reward: drawing it again re-scores the same candidates
    on inputs already seen (on a code_gen table the loop spent 23 of 25 steps this way)."""
    spec = env.task.system.component(component).params[param]
    if not env.settings.kinds[spec.kind].finite_values(spec):
        return False  # new proposals each draw (edits, a proposer LM): worth drawing again
    return len(at.unchanged.get((component, param), ())) >= len(env.train)


def aligned(env: StepEnv, component: str) -> bool:
    """Stage 1's cross-validated pairwise accuracy is above ``min_alignment``; a component
    measured on too few pairs (or not at all: too few inputs to cross-validate) passes."""
    s = env.settings
    measured = (env.store.get_meta("lrf_alignment") or {}).get(component)
    return (measured is None or measured["pairs"] < s.min_alignment_pairs
            or measured["accuracy"] > s.min_alignment)


def search_sample(env: StepEnv, at: Position, component: str,
                  t: int) -> list[tuple[Example, dict[str, Any]]]:
    """The component's inputs x_k on step ``t``'s search sample under the current config, each
    with the train example it came from (what an exact reward scores against).
    The sample moves through the train split from step to step: a component drawn again
    under an unchanged config would otherwise score the same inputs again (on HotpotQA the
    answer writer's candidates tied with its prompt on one fixed sample six times). Stage 1
    ran every train input under the starting config, so the prefixes come from the cache."""
    rt = env.runtime_for(at.policies)
    examples = window(env.train, t, env.settings.search_size)
    traces = [env.task.system.run(e.id, e.inputs, at.config, rt) for e in examples]
    env.account.add_traces("local_search", traces)
    return [(e, tr.step(component).inputs) for e, tr in zip(examples, traces, strict=True)
            if not tr.step(component).skipped]


Expanded = tuple[Proposal, list[Scored], list[tuple[tuple[str, ...], float]]]


def expand(env: StepEnv, at: Position, component: str, param: str, kind: ParamKind,
           search: Sequence[dict[str, Any]], rng: random.Random) -> Expanded | Outcome:
    """A global param: its optimizer ranks values (``propose``); each value comes with its
    variants (coupled kinds); values the gate rejected are closed; the optimizer picks among the
    open ones; the pick's best open variant is the proposal."""
    view = LocalView(env.task, component, param, at.config, search, at.reward,
                     env.runtime_for(at.policies), rng, env.account, env.settings.proposer,
                     rollout_winners(env.store, component)
                     if kind.rollout_demos and env.settings.rollout_demos else (),
                     continues(env.exact, component, kind.network),
                     at.carried.get((component, param)))
    optimizer = env.optimizers[kind.name]
    scored = [Scored(*s) for s in optimizer.propose(view)]  # plain (value, reward) pairs too
    siblings, fresh = _siblings(env, at, view, kind)
    current = value_key(view.current)
    candidates, open_ = [], []
    for s in scored:
        resets = [(), siblings] if siblings else [()]
        shut = closed(env, at, view, kind, s.value, resets)
        if fresh is not None and value_key(s.value) != current:
            # another option is worth its better open variant (both when neither is open)
            alive = [r for r in resets if tried(component, param, s.value, r) not in at.rejected]
            s = Scored(s.value, max(_variant_reward(view, fresh, s.value, r)
                                    for r in alive or resets))
        candidates.append(s)
        open_.append(not shut)
    value = (latest(candidates, open_, view.current) if view.continued
             else optimizer.pick(candidates, open_, view.current, rng))
    config = at.config.with_value(component, param, value)
    return variant(env, at, component, param, value, config, dict(at.policies), siblings, view,
                   fresh, candidates)


def expand_per_instance(env: StepEnv, at: Position, component: str, param: str,
                        kind: ParamKind, search: Sequence[dict[str, Any]],
                        rng: random.Random) -> Expanded | Outcome:
    """A per-instance param: the LRF selector, a global option, or no change
    (``per_instance_proposal``); a selector reads the reward frozen as it is now."""
    s = env.settings
    options = env.task.system.component(component).params[param].options
    scores = cost_penalized(option_scores(at.reward, component, param, search, options),
                            options, s.choice_costs.get((component, param)), s.cost_weight)
    candidates = [Scored(o, r) for o, r in
                  zip(options, scores.mean(axis=0).tolist() if len(scores) else [], strict=False)]
    value = per_instance_proposal(scores, options, at.config[component][param],
                                  (component, param) in at.policies, rng, s.tau,
                                  policy_rejected=tried(component, param, SELECTOR)
                                  in at.rejected)
    policies, config = dict(at.policies), at.config
    if value == SELECTOR:
        policies[(component, param)] = env.frozen.freeze(at.reward)
        return variant(env, at, component, param, value, config, policies, (), None, None,
                       candidates)
    policies.pop((component, param), None)
    config = at.config.with_value(component, param, value)
    # a global option scored under the proposal's selectors (this param's stepped aside)
    view = LocalView(env.task, component, param, at.config, search, at.reward,
                     env.runtime_for(policies), random.Random(0), env.account)
    siblings, fresh = _siblings(env, at, view, kind)
    return variant(env, at, component, param, value, config, policies, siblings, view, fresh,
                   candidates)


def _siblings(env: StepEnv, at: Position, view: LocalView, kind: ParamKind
              ) -> tuple[tuple[str, ...], LocalView | None]:
    """A coupled kind's tuned siblings (``_coupled``) and a view with them reset; none else."""
    start = env.task.system.default_config()
    siblings = (tuned_siblings(at.config, start, view.component, view.param) if kind.coupled
                else ())
    if not siblings:
        return (), None
    return siblings, dataclasses.replace(
        view, config=at_start(at.config, start, view.component, siblings))


def variant(env: StepEnv, at: Position, component: str, param: str, value: Any,
            config: SystemConfig, policies: dict[tuple[str, str], str],
            siblings: tuple[str, ...], view: LocalView | None, fresh: LocalView | None,
            candidates: list[Scored]) -> Expanded | Outcome:
    """The proposal for the picked ``value``: no change, already rejected, or its best open
    variant (as proposed, or with the tuned ``siblings`` reset) by local reward."""
    before = at.score
    if config.digest == at.config.digest and policies == dict(at.policies):
        return Outcome(component, param, StepState.NO_CHANGE, before, value,
                       candidates=candidates)
    start = env.task.system.default_config()
    options = [v for v in variants(config, start, component, siblings)
               if tried(component, param, value, v.reset) not in at.rejected]
    if not options:  # a re-proposal
        return Outcome(component, param, StepState.ALREADY_REJECTED, before, value,
                       candidates=candidates)
    best, scored = best_variant(options, lambda v: _variant_reward(view, fresh, value, v.reset))
    return (Proposal(value, best.config, policies, best.reset), candidates,
            [(v.reset, r) for v, r in scored])


def _variant_reward(view: LocalView | None, fresh: LocalView | None, value: Any,
                    reset: Sequence[str]) -> float:
    chosen = fresh if reset else view
    assert chosen is not None, "a variant is scored only when there are two"
    return chosen.mean_reward(value)


def closed(env: StepEnv, at: Position, view: LocalView, kind: ParamKind, value: Any,
           resets: Sequence[Sequence[str]]) -> bool:
    """The gate rejected every variant of ``value`` under this config, the config it makes was
    validated already (by the portfolio's global arm), or (text:
    ``same_outputs_rejected``) a value with the same outputs on the search sample: the local
    reward cannot tell the two apart, so validating it would mostly re-measure what the gate
    already turned down. Seen on HotpotQA: with the same demos, three reworded instructions gave
    identical search outputs and were validated one after another."""
    c, p = view.component, view.param
    if all(tried(c, p, value, r) in at.rejected for r in resets):
        return True
    if (env.settings.proposals == "portfolio" and not at.policies and not any(resets)
            and at.config.with_value(c, p, value).digest in {v.config.digest
                                                            for v in at.validated}):
        return True  # the portfolio's global arm validated this very config
    rejected = [r.value for r in at.rejected if (r.component, r.param) == (c, p)
                and r.value is not None]
    if not kind.same_outputs_rejected or not rejected:
        return False
    spec = env.task.system.component(c).params[p]
    # search inputs are the current config's, so a rejected value's outputs come from the
    # response cache when its own step searched the same sample
    mine = _signature(view, value)
    return any(_signature(view, spec.from_json(json.loads(r))) == mine for r in rejected)


def _signature(view: LocalView, value: Any) -> str:
    return value_key([y for _, y in view.outputs_under(value)])


def validate(env: StepEnv, at: Position, component: str, proposal: Proposal,
             early: bool = True) -> dict[str, Trace]:
    """The candidate's val traces, re-running from ``component`` on; stopped at a gate
    checkpoint once the candidate is clearly worse (then only a prefix of val is here),
    unless not ``early``."""
    rt, key = env.runtime_for(proposal.policies), trace_key(proposal.config, proposal.policies)
    gate, val = env.settings.gate, env.val
    out: dict[str, Trace] = {}
    done = 0
    for stop in gate.checkpoints(len(val)) if early else [len(val)]:
        for e in val[done:stop]:
            trace = env.task.score(env.task.system.run_from(component, at.val_traces[e.id],
                                                            proposal.config, rt), e)
            trace.config_digest = key
            out[e.id] = trace
        done = stop
        seen = val[:done]
        if done < len(val) and gate.clearly_worse(
                [out[e.id].reward or 0.0 for e in seen],
                [at.val_traces[e.id].reward or 0.0 for e in seen]):
            break
    env.account.add_traces("validation", out.values())
    return out


def fresh_batch(env: StepEnv, t: int) -> list[Example]:
    """Step ``t``'s fresh adaptation inputs: a window moving like the search sample."""
    return window(env.train, t, env.settings.fresh_inputs)
