"""The local reward's pick against a random open value, decision by decision, on a replay table.

Each time the loop's local optimizer picks among a slot's open values, a replay table knows what
every one of them scores: the config with that value (the rest as the loop had it) on the seed's
test (and validation) questions, with no LLM call. So the pick is judged where it is made, not
through the end-of-run metric, where the gate, the reject memory and an exhausted space let a
random order reach the same final config (``rule_ablation.py --variants random-pick``).

Per decision with an open value besides the current one:

- pick − random gain: where the pick leaves the config's test score (staying: unchanged) minus
  where a uniform draw among the open values leaves it (``random-pick`` always moves), before
  the gate. On a two-value slot this is the decision to move or stay.

Per decision with two or more open values ("informative"; with one, a random pick is the local
reward's pick by construction):

- top − random: test score of the open value the local reward ranks highest, minus the mean
  over the open values (a uniform random pick's expectation);
- top is best: the share of decisions where that value is the best open one on test (ties
  shared), beside chance (the mean of 1/k);
- moved: decisions where the pick left the current value, and the test gain of the move.

Means per seed, then the mean over seeds with a bootstrap 95% interval over seeds.

    python -m benchmarks.pick_quality benchmarks/tables/code_gen_models3 --seeds 20 \\
        [--limit 1000] [--proposals local|portfolio] [--json benchmarks/results/replay/picks-X.json]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks._patch import patched
from benchmarks._replay import add_split_option, greedy_lookup
from benchmarks._results import add_json_option, head_commit, write_result
from coalign.compare import Lookup, Split, coalign_method, draw_split, split_sizes
from coalign.errors import ConfigError
from coalign.optimize import _base, _choice, _step, value_key
from coalign.stats import paired_bootstrap
from coalign.tables import CandidateSpace, config_indices


@dataclass(frozen=True)
class Decision:
    """One pick: the slot, the config it was made under, the scored values, which were open."""

    component: str
    param: str
    config: Any  # SystemConfig
    scored: tuple[Any, ...]  # Scored(value, local reward)
    open_: tuple[bool, ...]
    current: Any
    chosen: Any


@contextlib.contextmanager
def recording(decisions: list[Decision]) -> Iterator[None]:
    """Every local pick the loop makes while inside, appended to ``decisions``."""
    where: list[tuple[Any, str, str]] = []  # the expand call in progress
    real_expand = _step.expand

    def expand(env: Any, at: Any, component: str, param: str, *args: Any) -> Any:
        where.append((at.config, component, param))
        try:
            return real_expand(env, at, component, param, *args)
        finally:
            where.pop()

    def wrap(real: Any) -> Any:
        def pick(self: Any, scored: Sequence[Any], open_: Sequence[bool], current: Any,
                 rng: Any) -> Any:
            chosen = real(self, scored, open_, current, rng)
            if where:
                config, component, param = where[-1]
                decisions.append(Decision(component, param, config, tuple(scored),
                                          tuple(open_), current, chosen))
            return chosen
        return pick

    with patched([(_step, "expand", expand)] + [
            (cls, "pick", wrap(cls.pick)) for cls in (_base.BaseLocalOptimizer,
                                                      _choice.ExpChoiceOptimizer)]):
        yield


def _scores(d: Decision, lookup: Lookup, space: CandidateSpace, questions: Sequence[int],
            values: Sequence[Any]) -> list[float]:
    """Mean score on ``questions`` of the config with each value in the decision's slot."""
    out = []
    for v in values:
        picks = config_indices(d.config.with_value(d.component, d.param, v).to_json(), space)
        out.append(lookup.score(lookup.config([picks[s] for s in lookup.slots]), questions))
    return out


def judge(d: Decision, lookup: Lookup, space: CandidateSpace, split: Split) -> dict[str, Any]:
    """What the decision's values score: the local reward's top open value against the mean of
    the open values, and the move it made (if any) against staying."""
    now = value_key(d.current)
    others = [s for s, o in zip(d.scored, d.open_, strict=True) if o and value_key(s.value) != now]
    row: dict[str, Any] = {"slot": f"{d.component}.{d.param}", "open": len(others),
                           "moved": value_key(d.chosen) != now}
    if not others:
        return row
    values = [s.value for s in others]
    test = _scores(d, lookup, space, split.test, values)
    val = _scores(d, lookup, space, split.val, values)
    current = _scores(d, lookup, space, split.test, [d.current])[0]
    top = max(range(len(others)), key=lambda i: others[i].reward)  # earliest of ties
    winners = [i for i, t in enumerate(test) if t == max(test)]
    row.update(top_test=test[top], random_test=statistics.fmean(test), top_val=val[top],
               random_val=statistics.fmean(val),
               top_is_best=(1.0 / len(winners)) if top in winners else 0.0,
               chance=1.0 / len(others), current_test=current)
    chosen = next((i for i, v in enumerate(values) if value_key(v) == value_key(d.chosen)), None)
    # before the gate: where the pick leaves the test score (staying: no change), against a
    # uniform draw among the open values (random-pick, which always moves)
    row["pick_gain"] = 0.0 if chosen is None else test[chosen] - current
    row["random_gain"] = row["random_test"] - current
    if chosen is not None:
        row["move_gain"] = row["pick_gain"]
    return row


def _untabled_trainable(space: CandidateSpace) -> list[str]:
    task = space.task()
    return [f"{c.name}.{p}" for c in task.system.components for p, spec in c.params.items()
            if f"{c.name}.{p}" not in space.params and spec.kind not in ("text", "choice")]


def seed_rows(table: Path, space: CandidateSpace, lookup: Lookup, questions: Sequence[str],
              sizes: Sequence[int], seed: int, limit: float,
              settings: dict[str, Any] | None) -> list[dict[str, Any]]:
    decisions: list[Decision] = []
    method = coalign_method(table, questions, settings=settings)
    split = draw_split(len(questions), sizes, seed)
    with recording(decisions):
        method(lookup, split, limit, seed)
    # an untabled Text or Choice stays at its start on replay: no pick to judge
    return [{**judge(d, lookup, space, split), "seed": seed} for d in decisions
            if f"{d.component}.{d.param}" in space.params]


def _per_seed(rows: Sequence[dict[str, Any]], seeds: Sequence[int]) -> Any:
    """A function of a key: its mean per seed over ``rows``, for the seeds that have rows;
    None where fewer than two seeds have any."""
    by_seed: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_seed[r["seed"]].append(r)
    used = [s for s in seeds if by_seed[s]]
    if len(used) < 2:
        return None
    return lambda key: [statistics.fmean(r[key] for r in by_seed[s]) for s in used]


def summarize(rows: Sequence[dict[str, Any]], seeds: Sequence[int]) -> dict[str, Any]:
    """Per-seed means, then the mean over the seeds that had any, with a bootstrap 95% interval
    over seeds: the pick's gain against random-pick's over every decision with an open value,
    the ranking over the informative ones (two or more open values)."""
    moves = [r for r in rows if r["moved"] and "move_gain" in r]
    out: dict[str, Any] = {"decisions": len(rows), "moves": len(moves),
                           "move_gain_test": (statistics.fmean(r["move_gain"] for r in moves)
                                              if moves else None)}
    some = _per_seed([r for r in rows if r["open"] >= 1], seeds)
    if some is not None:
        mean, lo, hi, _ = paired_bootstrap(some("pick_gain"), some("random_gain"))
        out["pick_minus_random_gain"] = {"mean": mean, "lo": lo, "hi": hi}
    informative = [r for r in rows if r["open"] >= 2]
    out["informative"] = len(informative)
    per_seed = _per_seed(informative, seeds)
    if per_seed is None:
        return out
    for what in ("test", "val"):
        mean, lo, hi, _ = paired_bootstrap(per_seed(f"top_{what}"), per_seed(f"random_{what}"))
        out[f"top_minus_random_{what}"] = {"mean": mean, "lo": lo, "hi": hi}
    mean, lo, hi, _ = paired_bootstrap(per_seed("top_is_best"), per_seed("chance"))
    out["top_is_best"] = {"rate": statistics.fmean(per_seed("top_is_best")),
                          "chance": statistics.fmean(per_seed("chance")),
                          "minus_chance": {"mean": mean, "lo": lo, "hi": hi}}
    return out


def _cell(d: dict[str, float] | None) -> str:
    return f"{d['mean']:+.3f} [{d['lo']:+.3f},{d['hi']:+.3f}]" if d else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", type=Path)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--limit", type=float, default=1000, help="equivalent runs per seed")
    add_split_option(ap)
    ap.add_argument("--proposals", choices=["local", "portfolio"], default=None)
    add_json_option(ap)
    args = ap.parse_args()
    commit = head_commit()
    table, rewards, lookup = greedy_lookup(args.table)
    if bad := _untabled_trainable(table.space):
        raise SystemExit(f"pick_quality: {args.table} has trainable params outside the table "
                         f"({', '.join(bad)}); their configs have no replay score")
    sizes = split_sizes(len(rewards.questions), args.split)
    settings = {"budget": {"proposals": args.proposals}} if args.proposals else None
    seeds = list(range(args.seeds))
    t0 = time.perf_counter()
    rows = [r for s in seeds for r in seed_rows(args.table, table.space, lookup,
                                                rewards.questions, sizes, s, args.limit,
                                                settings)]
    wall = time.perf_counter() - t0
    slots = sorted({r["slot"] for r in rows})
    result = {"table": str(args.table), "limit": args.limit, "split": list(sizes),
              "seeds": args.seeds, "proposals": args.proposals, "wall_s": wall,
              "all": summarize(rows, seeds),
              "by_slot": {s: summarize([r for r in rows if r["slot"] == s], seeds)
                          for s in slots}, "rows": rows}
    print(f"{table.space.system}: {len(rewards.questions)} questions, split {sizes}, "
          f"{args.seeds} seeds to {args.limit:g} runs, {wall:.0f} s")
    print(f"{'slot':<26} {'decisions':>9} {'pick - random gain':>26} {'inform.':>7} "
          f"{'top - random (test)':>26} {'top is best':>11} {'chance':>6} {'moves':>5} "
          f"{'move gain':>9}")
    for name, s in [("all", result["all"]), *result["by_slot"].items()]:
        best = s.get("top_is_best") or {}
        gain = s.get("move_gain_test")
        print(f"{name:<26} {s['decisions']:>9} {_cell(s.get('pick_minus_random_gain')):>26} "
              f"{s['informative']:>7} {_cell(s.get('top_minus_random_test')):>26} "
              f"{best.get('rate', float('nan')):>11.2f} {best.get('chance', float('nan')):>6.2f} "
              f"{s.get('moves', 0):>5} {'-' if gain is None else format(gain, '+.3f'):>9}")
    if args.json:
        write_result(args.json, result, commit=commit)


if __name__ == "__main__":
    try:
        main()
    except ConfigError as exc:
        raise SystemExit(f"pick_quality: {exc}") from None
