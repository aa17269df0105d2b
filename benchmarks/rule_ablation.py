"""The loop's rules, each switched off in turn, on a replay table over many seeds (no LLM call).

Every variant is coalign's full loop (``coalign_method``) on the same seeds, splits and budgets
as ``replay_compare.py``; a variant patches one rule of ``coalign.optimize`` for the duration of
its runs only. Prints, per budget, each variant's mean test metric [95% interval over seeds] and
its paired difference to the default loop, plus what the runs did (equivalent runs spent until
the loop stopped, validated and accepted steps); writes the JSON.

    python -m benchmarks.rule_ablation benchmarks/tables/code_gen [--seeds 20] \
        [--variants default random-pick ...] [--proposals local|portfolio] \
        [--json benchmarks/results/replay/ablation-code_gen.json]

Variants (rule numbers of docs/optimize.md's rules table):

- ``default``: the loop as shipped.
- ``random-pick``: the local reward's ranking replaced by a uniform draw among the open values
  other than the current one (the central idea, ablated: does the ranking beat chance?).
- ``best-always`` (rule 15 off): the best-ranked open value other than the current one is
  validated even when its local reward is not above the current value's.
- ``no-align-skip`` (rule 2 off): every component with a local reward is drawn, however it ranks
  held-out pairs.
- ``no-reject-memory`` (rules 4-5 off): values the gate rejected under this config may be
  proposed (and validated) again.
- ``features-lrf`` / ``embedding-lrf`` (settings, not rules): the local rewards read only the
  cheap features (``reward_embedding: false``, the default since the replay tables' alignment
  figures) or the MiniLM embedding too (``reward_embedding: true``, the default before).
- ``checks-residual``: the heads trained on what the checks leave unexplained instead of on
  the pairs alone with the checks added after (``TrainConfig.residual_heads``).
- ``no-checks`` (a setting): the local rewards without the components' gold-free checks
  (``reward_checks: false``; code_gen's "passes the example test", docs/rewards.md).
- ``bootstrap-gate`` (a setting): the gate accepts a change only when a paired bootstrap over
  the validation questions puts it above the current config with confidence 0.9 (run config
  ``gate: bootstrap``) instead of on any strict improvement of the validation mean.
- ``no-pool`` (rule 11 off): a component's rollout specs are compared each on its own (the
  candidates of one param with each other only), not pooled per input.
- ``raw-gate`` (with ``--proposals portfolio``): the portfolio's gate compares the raw
  validation sums (strictly higher) instead of the score model's expected scores;
  ``raw-and-model-gate``: it asks for both. ``confident-gate``: the score model's expected
  score must exceed the current config's by 1.28 posterior sds of the difference (P(better)
  >= 0.9) instead of at all (issue 39's false-acceptance control); ``likely-gate``: the same
  at P(better) >= 0.75 (0.6745 sds).
- ``stage1-lazy`` (a setting): stage 1 paid one component before each of the first steps
  (``budget.stage1: lazy``) instead of every component before the first.
- ``early-reject`` (rule 16 on; off by default): validation stops at a checkpoint (every 25
  inputs) once the candidate is worse so far with confidence 0.9 (``early_reject: 0.9``). Needs
  a validation split of more than 25 questions to ever fire. ``early-reject-10``: the same,
  checked every 10 inputs.
- ``tau-0.1`` / ``tau-0.3`` (settings): the exp(r / tau) draw among a slot's values (Choice
  slots, and per-input selectors' proposals) sharper than the default tau of 1
  (``budget.tau``): closer to taking the local reward's top value.
- Issue 39's changes, each undone against the default: ``local-proposals`` (a setting:
  ``budget.proposals: local``, Algorithm 1's local steps after stage 1 paid up front, before
  the portfolio's anytime proposals and its score-model gate); ``raw-gate`` above (the gate
  before the score model); ``learned-terminal`` (a setting: ``budget.terminal_reward:
  learned``, the last component's head instead of its exact reward); ``no-carry`` (each local
  step of a decider's weights trains afresh from the config's weights, ``_carry`` off).
- ``joint`` (``-tau-0.1``, ``-random-pick``): a drawn param's local step ranks every
  combination of its component's finite params and proposes the pick's whole combination
  (``benchmarks/_joint.py``), with the default draw, a sharper one, or a uniform one.
"""

from __future__ import annotations

import argparse
import functools
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import coalign.job
from benchmarks._joint import joint_expand
from benchmarks._patch import patched
from benchmarks._replay import add_split_option, greedy_lookup
from benchmarks._results import add_json_option, head_commit, write_result
from coalign.compare import Lookup, Method, Split, Trajectory, coalign_method, compare, split_sizes
from coalign.optimize import _base, _choice, _gate, _global_step, _loop, _step, value_key
from coalign.rewards import TrainConfig
from coalign.rollouts import Collection, RolloutSpec, collect_pairs


def _others(scored: Sequence[Any], open_: Sequence[bool], current: Any) -> list[Any]:
    return [s for s, o in zip(scored, open_, strict=True)
            if o and value_key(s.value) != value_key(current)]


def _random_pick(self: Any, scored: Sequence[Any], open_: Sequence[bool], current: Any,
                 rng: random.Random) -> Any:
    others = _others(scored, open_, current)
    return rng.choice(others).value if others else current


def _best_always(self: Any, scored: Sequence[Any], open_: Sequence[bool], current: Any,
                 rng: random.Random) -> Any:
    others = _others(scored, open_, current)
    return max(others, key=lambda s: s.reward).value if others else current


def _unpooled(task: Any, component: str, examples: Any, config: Any, runtime: Any,
              spec: RolloutSpec | Sequence[RolloutSpec], **kw: Any) -> Collection:
    """``collect_pairs`` once per spec: candidates are paired within their own spec only."""
    specs = (spec,) if isinstance(spec, RolloutSpec) else tuple(spec)
    parts = [collect_pairs(task, component, examples, config, runtime, sp, **kw) for sp in specs]
    return Collection([p for c in parts for p in c.pairs], [p for c in parts for p in c.ties],
                      parts[0].account, [t for c in parts for t in c.traces])


def _raw_better(axes: Any, validated: Sequence[Any], current: Any, candidate: Any) -> bool:
    now = next(v.rewards for v in validated if v.config.digest == current.digest)
    return sum(candidate.rewards) > sum(now)


def _raw_and_model_better(axes: Any, validated: Sequence[Any], current: Any,
                          candidate: Any) -> bool:
    return (_raw_better(axes, validated, current, candidate)
            and _MODEL_BETTER(axes, validated, current, candidate))


_MODEL_BETTER = _step.better  # the portfolio's own gate, before any patch
CONFIDENT_Z = 1.2816  # the confident gate's z: P(candidate better) >= 0.9 under the model
LIKELY_Z = 0.6745  # the likely gate's: P(candidate better) >= 0.75


def _confident_better(axes: Any, validated: Sequence[Any], current: Any,
                      candidate: Any, z: float = CONFIDENT_Z) -> bool:
    """The score model's gate asking for confidence: the candidate's expected score above the
    current config's by ``z`` posterior sds of the difference (the two taken as
    independent: the model's noise is already the paired, config x input part)."""
    from coalign.optimize._portfolio import posterior

    model = posterior(axes, [*validated, candidate])
    now, new = axes.picks(current), axes.picks(candidate.config)
    if model is None or now is None or new is None:
        return _raw_better(axes, validated, current, candidate)
    key_new, key_now = candidate.config.digest, current.digest
    gap = model.mean(new, key_new) - model.mean(now, key_now)
    return gap > z * float(np.hypot(model.sd(new, key_new), model.sd(now, key_now)))


def _never(*args: Any, **kwargs: Any) -> bool:
    """A rule switched off: never closed, never continued."""
    return False


def _picks(fn: Callable[..., Any]) -> list[tuple[Any, str, Any]]:
    # every optimizer's pick: the default one and the choice optimizer's own
    return [(_base.BaseLocalOptimizer, "pick", fn), (_choice.ExpChoiceOptimizer, "pick", fn)]


VARIANTS: dict[str, list[tuple[Any, str, Any]]] = {
    "default": [],
    "random-pick": _picks(_random_pick),
    "best-always": _picks(_best_always),
    "no-align-skip": [(_step, "aligned", lambda env, component: True)],
    "no-reject-memory": [(_step, "closed", _never)],
    "no-pool": [(_loop, "collect_pairs", _unpooled)],
    # the portfolio's gate on the raw validation sums instead of the score model's estimates
    "raw-gate": [(_step, "better", _raw_better)],
    # both: a strictly higher raw validation sum and a higher expected score
    "raw-and-model-gate": [(_step, "better", _raw_and_model_better)],
    # the score model's gate with P(better) >= 0.9 instead of a higher expected score
    "confident-gate": [(_step, "better", _confident_better)],
    # the same asking for P(better) >= 0.75
    "likely-gate": [(_step, "better", functools.partial(_confident_better, z=LIKELY_Z))],
    "features-lrf": [],
    "embedding-lrf": [],
    "no-checks": [],
    # heads trained on what the checks leave unexplained (not on the pairs alone)
    "checks-residual": [(coalign.job, "TrainConfig",
                         functools.partial(TrainConfig, residual_heads=True))],
    "bootstrap-gate": [],
    "early-reject": [],
    # checked every 10 validation inputs instead of 25: a 30-input validation can stop at all
    "early-reject-10": [(_gate.Gate, "checkpoints", lambda self, n: (
        [*range(10, n, 10), n] if self.early_reject > 0 else [n]))],
    "stage1-8": [],
    "stage1-lazy": [],
    # a sharper exp(r / tau) draw among a Choice slot's values (the default tau is 1)
    "tau-0.1": [],
    "tau-0.3": [],
    # a local step over the component's whole finite grid (benchmarks/_joint.py)
    "joint": [(_step, "expand", joint_expand)],
    "joint-tau-0.1": [(_step, "expand", joint_expand)],
    "joint-random-pick": [(_step, "expand", joint_expand), *_picks(_random_pick)],
    # issue 39's changes, each undone: Algorithm 1's local steps after an upfront stage 1 (no
    # portfolio); the last component's learned local reward (no exact one); every local step
    # of a decider's weights trained afresh (no carried training)
    "local-proposals": [],
    "learned-terminal": [],
    "no-carry": [(_step, "continues", _never), (_global_step, "continues", _never)],
}
# variants that are a run-config setting rather than a patch
SETTINGS: dict[str, dict[str, Any]] = {"features-lrf": {"reward_embedding": False},
                                       "embedding-lrf": {"reward_embedding": True},
                                       "no-checks": {"reward_checks": False},
                                       "bootstrap-gate": {"gate": "bootstrap"},
                                       "early-reject": {"early_reject": 0.9},
                                       "early-reject-10": {"early_reject": 0.9},
                                       "stage1-8": {"budget": {"stage1_inputs": 8}},
                                       "stage1-lazy": {"budget": {"stage1": "lazy"}},
                                       "tau-0.1": {"budget": {"tau": 0.1}},
                                       "tau-0.3": {"budget": {"tau": 0.3}},
                                       "joint-tau-0.1": {"budget": {"tau": 0.1}},
                                       "local-proposals": {"budget": {"proposals": "local"}},
                                       "learned-terminal": {"budget": {
                                           "terminal_reward": "learned"}}}


def _settings(variant: str, proposals: str | None) -> dict[str, Any] | None:
    """The variant's run-config settings, with ``budget.proposals`` if one is asked for."""
    settings = dict(SETTINGS.get(variant, {}))
    if proposals is not None:
        settings["budget"] = {**settings.get("budget", {}), "proposals": proposals}
    return settings or None


def _with_patches(method: Method, patches: Sequence[tuple[Any, str, Any]],
                  log: list[Trajectory]) -> Method:
    def run(lookup: Lookup, split: Split, limit: float, seed: int) -> Trajectory:
        with patched(patches):
            trajectory = method(lookup, split, limit, seed)
        log.append(trajectory)
        return trajectory

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", type=Path)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budgets", type=float, nargs="+", default=[250, 500, 1000, 2000])
    add_split_option(ap)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--proposals", choices=["local", "portfolio"], default=None,
                    help="every variant's budget.proposals (default: the run config's)")
    add_json_option(ap)
    args = ap.parse_args()
    commit = head_commit()  # the code that ran, not what HEAD is when it ends
    table, rewards, lookup = greedy_lookup(args.table)
    sizes = split_sizes(len(rewards.questions), args.split)
    logs: dict[str, list[Trajectory]] = {v: [] for v in args.variants}
    methods = {v: (_with_patches(coalign_method(args.table, rewards.questions,
                                                settings=_settings(v, args.proposals)),
                                 VARIANTS[v], logs[v]), True) for v in args.variants}
    t0 = time.perf_counter()
    result = compare(lookup, sizes=sizes, seeds=list(range(args.seeds)), budgets=args.budgets,
                     methods=methods)
    wall = time.perf_counter() - t0
    metric = table.space.task().metric_name
    print(f"{table.space.system}: {len(rewards.questions)} questions, split {sizes}, "
          f"{args.seeds} seeds, {wall:.0f} s")
    out: dict[str, Any] = {
        "table": str(args.table), "metric": metric, "wall_s": wall,
        **result.to_json(), "paired_vs_default": {}, "runs": {}}
    print(f"{'variant':<18} " + " ".join(f"{b:>24g}" for b in result.budgets))
    for v in args.variants:
        cells = []
        for b in result.budgets:
            s = result.summary(v, b)
            cell = f"{s['mean']:.3f}"
            if v != "default" and "default" in args.variants:
                d = result.paired(v, "default", b)
                out["paired_vs_default"].setdefault(v, {})[str(b)] = d
                cell += f" {d['mean']:+.3f} [{d['lo']:+.3f},{d['hi']:+.3f}]"
            cells.append(f"{cell:>24}")
        print(f"{v:<18} " + " ".join(cells))
    print(f"\n{'variant':<18} {'runs spent':>10} {'steps':>6} {'validated':>9} {'accepted':>8} "
          f"{'stopped early':>13}")
    for v in args.variants:
        runs = {k: float(np.mean([t.stats.get(k, 0.0) for t in logs[v]]))
                for k in ("spent", "steps", "validated", "accepted", "stopped_early")}
        out["runs"][v] = runs
        print(f"{v:<18} {runs['spent']:>10.0f} {runs['steps']:>6.1f} {runs['validated']:>9.1f} "
              f"{runs['accepted']:>8.2f} {runs['stopped_early']:>13.1f}")
    if args.json:
        write_result(args.json, out, commit=commit)


if __name__ == "__main__":
    main()
