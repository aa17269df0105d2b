"""Headroom of a replay table: starting config, best global config and per-question oracle.

Every config of the space is evaluated on replay (no LLM call) over the table's finished
questions. A space tells optimizers apart only if the best global config is clearly above the
start and exhaustive search costs well above the budgets compared; per-instance choices need the
per-question oracle above the best global config. The best global config is picked on the same
questions it is scored on (optimistic); ``--holdout`` also picks it on one half and scores it on
the other.

On a model-choice space (params ``<component>.model``) it adds the cost side: each config's
cost per query (model seconds), the best config under a cap of half the all-strongest cost,
and the per-question complementarity of models: on how many questions the cheapest models
everywhere already reach the question's best reward, on how many only a config with a
stronger model does, and on how many nothing scores.

    python -m benchmarks.table_headroom benchmarks/tables/multihop_qa \
        --json benchmarks/results/replay/headroom-multihop_qa.json
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import numpy as np

from benchmarks._results import add_json_option, write_result
from coalign.compare import Lookup, model_slots
from coalign.tables import Table, config_indices


def describe(config, space) -> dict:
    """The config as indices into each param's candidate list (short, and stable)."""
    return config_indices(config.to_json(), space)


def model_headroom(rewards, space) -> dict:
    """Cost per query and model complementarity of a model-choice space (see the docstring)."""
    lookup = Lookup.of_table(rewards, space)
    slots = model_slots(lookup)
    everything = list(range(len(rewards.questions)))
    costs = lookup.costs.mean(axis=1)
    means = rewards.means()
    cap = lookup.cap_of(0.5)
    within = np.where(costs <= cap + 1e-9, means, -np.inf)
    capped = int(np.argmax(within))
    strongest = lookup.fixed_models(-1)
    cheap = np.all(lookup.index[:, slots] == lookup.index[0, slots], axis=1)  # as the start
    best_q = rewards.scores.max(axis=0)
    cheap_q = rewards.scores[cheap].max(axis=0)
    unsolved = best_q <= 0
    return {
        "model_slots": [lookup.slots[i] for i in slots],
        "cost_per_query": {"start": float(costs[0]), "best_global": float(costs[rewards.best()]),
                           "all_strongest": float(costs[strongest]),
                           "min": float(costs.min()), "max": float(costs.max())},
        "all_strongest": {"score": float(means[strongest]),
                          "config": describe(rewards.configs[strongest], space)},
        "cap_half_strongest": {"cap": cap, "best": float(means[capped]),
                               "cost": float(costs[capped]),
                               "config": describe(rewards.configs[capped], space)},
        "complementarity": {
            "cheap_models_suffice": int(np.sum((cheap_q >= best_q) & ~unsolved)),
            "stronger_model_needed": int(np.sum((cheap_q < best_q) & ~unsolved)),
            "nothing_scores": int(np.sum(unsolved)), "questions": len(everything)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("--level", default="greedy")
    parser.add_argument("--seed", type=int, default=0)
    add_json_option(parser)
    args = parser.parse_args()
    table = Table(args.table)
    space = table.space
    t0 = time.perf_counter()
    rewards = table.rewards(args.level)
    wall = time.perf_counter() - t0
    n, configs = len(rewards.questions), rewards.configs
    if n < 2:
        raise SystemExit(f"only {n} finished question(s) in {args.table}")
    means = rewards.means()
    best, worst = rewards.best(), int(means.argmin())
    oracle = rewards.oracle()
    rng = random.Random(args.seed)
    order = list(range(n))
    rng.shuffle(order)
    pick, held = order[: n // 2], order[n // 2:]
    picked = rewards.best(pick)
    held_start = float(rewards.means(held)[0])
    held_best = float(rewards.means(held)[picked])
    result = {
        "table": str(args.table), "space": space.digest, "questions": n,
        "configs": len(configs), "replay_wall_s": wall,
        "start": float(means[0]), "best_global": float(means[best]),
        "worst_global": float(means[worst]),
        "oracle_per_question": oracle, "best_config": describe(configs[best], space),
        "holdout": {"picked_on": len(pick), "scored_on": len(held), "start": held_start,
                    "picked": held_best, "picked_config": describe(configs[picked], space)},
        "ranked": sorted(((float(means[i]), describe(c, space)) for i, c in enumerate(configs)),
                         key=lambda t: -t[0])[:10],
    }
    print(f"{n} questions, {len(configs)} configs evaluated on replay in {wall:.1f} s")
    print(f"start {means[0]:.3f}  best global {means[best]:.3f}  worst {means[worst]:.3f}  "
          f"per-question oracle {oracle:.3f}")
    print(f"picked on {len(pick)} questions, scored on the other {len(held)}: start "
          f"{held_start:.3f}, picked {held_best:.3f}")
    print("best config:", result["best_config"])
    if model_slots(Lookup.of_table(rewards, space)):
        result["models"] = models = model_headroom(rewards, space)
        c, capped = models["cost_per_query"], models["cap_half_strongest"]
        print(f"cost per query (model s): start {c['start']:.2f}, best global "
              f"{c['best_global']:.2f}, all strongest {c['all_strongest']:.2f} (scores "
              f"{models['all_strongest']['score']:.3f})")
        print(f"under half the all-strongest cost ({capped['cap']:.2f} s): best "
              f"{capped['best']:.3f} at {capped['cost']:.2f} s")
        k = models["complementarity"]
        print(f"per question: the start's models suffice on {k['cheap_models_suffice']}, a "
              f"stronger model is needed on {k['stronger_model_needed']}, nothing scores on "
              f"{k['nothing_scores']} (of {k['questions']})")
    if args.json:
        write_result(args.json, result, indent=1)


if __name__ == "__main__":
    main()
