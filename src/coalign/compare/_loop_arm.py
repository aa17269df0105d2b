"""coalign's own loop as a comparison method on a replay table.

The full loop (stage-1 pairs from rollouts on the table, local rewards, local optimizers, the
gate, stage 2) runs through ``Job`` with ``lm: replay:DIR`` in a temporary run dir, on the very
split the lookup methods get (a run config's split draws it from the table's pool with the
seed). Its trajectory: the start config known once stage 1 is paid for, then each accepted
config with the equivalent runs spent when the gate accepted it. The loop stops once it has
spent the largest budget, so one run gives every smaller budget's answer.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalign.compare._lookup import Lookup, Split, Trajectory
from coalign.errors import ConfigError
from coalign.optimize import StepState
from coalign.tables import CandidateSpace, config_indices, replay_policy_samples


def coalign_method(table: Path, questions: Sequence[str], *,
                   settings: Mapping[str, Any] | None = None,
                   max_iterations: int = 200) -> LoopMethod:
    """A ``Method`` running the loop on ``table``; ``questions`` are the lookup's question ids
    in its order (they must be the table's whole pool, in pool order: a run config draws its
    split from the pool). ``settings``: run config fields to set (``budget`` is merged into
    the default one, whose ``rollout_n`` is 0: tables are greedy; a param trained as a
    policy whose samples feed no LLM, a last-step decider's weights, gets ``policy_samples``
    ``POLICY_SAMPLES``, see ``_policy``)."""
    space = CandidateSpace.load(table)
    if list(questions) != list(space.questions):
        raise ConfigError(f"table {table}: the loop needs every pool question finished "
                          f"({len(questions)} of {len(space.questions)} are)")
    return LoopMethod(Path(table), space, tuple(questions), dict(settings or {}),
                      max_iterations, replay_policy_samples(space.task()))


@dataclass(frozen=True)
class LoopMethod:
    """The loop as a comparison method; a plain value, so comparisons can run seeds in worker
    processes."""

    table: Path
    space: CandidateSpace
    questions: tuple[str, ...]
    settings: dict[str, Any]
    max_iterations: int
    policy_samples: int | None = None  # for params trained as a policy (see coalign_method)

    def __call__(self, lookup: Lookup, split: Split, limit: float, seed: int) -> Trajectory:
        trajectory = Trajectory("coalign", latest=True)  # the loop's answer: where it stands

        def on_step(job: Any, rec: Any, spent: float) -> None:
            _count(trajectory.stats, rec, spent)
            if rec.accepted:
                trajectory.trials.append((spent, _system_index(job, lookup, split, self.space),
                                          float(rec.val_after)))

        def prepared(job: Any) -> None:  # a warm start's best so far, as each was validated
            warm = job.store.get_meta("warm_start") or {}
            best = float("-inf")
            for trial in warm.get("trials", []):
                if float(trial["score"]) <= best:
                    continue
                best = float(trial["score"])
                picks = config_indices(trial["config"], self.space)
                trajectory.trials.append((trial["spent"],
                                          lookup.config([picks[s] for s in lookup.slots]),
                                          best))
            if not trajectory.trials:  # the start, known once stage 1 is paid for
                trajectory.trials.append((job.optimizer.account.equivalent_runs(), 0,
                                          float("-inf")))

        sizes = (len(split.train), len(split.val), len(split.test))
        self.drive(sizes, seed, limit, on_step,
                   before=lambda job: _check_split(job, split, self.questions),
                   prepared=prepared)
        return trajectory

    def run_config(self, sizes: Sequence[int], seed: int) -> Any:
        """The run config of one seed: this table on replay, split sizes ``sizes``."""
        from coalign.runconfig import parse_run_config

        space, extra = self.space, dict(self.settings)
        raw = {"system": space.system, "data": space.dataset, "lm": f"replay:{self.table}",
               "seed": seed, **extra,
               "split": {"train": sizes[0], "val": sizes[1], "test": sizes[2], "seed": seed},
               "budget": {"iterations": self.max_iterations, "rollout_n": 0,
                          **({"policy_samples": self.policy_samples}
                             if self.policy_samples else {}),
                          **extra.get("budget", {})}}
        return parse_run_config(raw, "replay comparison")

    def drive(self, sizes: Sequence[int], seed: int, limit: float,
              on_step: Callable[[Any, Any, float], None],
              before: Callable[[Any], None] | None = None,
              prepared: Callable[[Any], None] | None = None,
              after: Callable[[Any], None] | None = None) -> float:
        """Run the loop in a temporary run dir until it has spent ``limit`` equivalent runs (or
        settles); ``before(job)`` runs ahead of stage 1, ``prepared(job)`` after it (and after
        a warm start), ``on_step(job, record, spent)`` after every step, ``after(job)`` once
        the loop stopped (the run dir still open). Returns what stage 1 cost."""
        from coalign.job import Job

        with tempfile.TemporaryDirectory(prefix="coalign-replay-") as tmp:
            job = Job.open(self.run_config(sizes, seed), Path(tmp) / "run")
            try:
                if before is not None:
                    before(job)
                opt = job.optimizer
                opt.prepare()
                stage1 = opt.account.equivalent_runs()
                if prepared is not None:
                    prepared(job)

                opt.run(on_step=lambda rec: on_step(job, rec, opt.account.equivalent_runs()),
                        budget=limit)
                if after is not None:
                    after(job)
            finally:
                job.store.close()
        return stage1


def _system_index(job: Any, lookup: Lookup, split: Split, space: CandidateSpace) -> int:
    """The lookup's number for the loop's current system: a global config of the space, or,
    under a per-instance policy (a choice made per input), a system of its own, scored by
    running it on the split's test questions on replay (no LLM call). So is a config whose
    untabled params (a decider's weights, say) left their start: the lookup knows only the
    tabled ones."""
    opt = job.optimizer
    if not opt.policies:
        data = opt.config.to_json()  # a Weights value serializes its tensors: once
        if _untabled(data, space) == _untabled(job.task.system.default_config().to_json(),
                                               space):
            picks = config_indices(data, space)
            return lookup.config([picks[s] for s in lookup.slots])
    result = job.on_test(opt.config, opt.policies)
    ids = [e.id for e in job.test]
    by_id = dict(zip(ids, result.scores, strict=True))
    cost = dict(zip(ids, (t.cost_s() for t in result.traces), strict=True))
    return lookup.add({q: by_id[space.questions[q]] for q in split.test},
                      {q: cost[space.questions[q]] for q in split.test})


def _untabled(data: dict, space: CandidateSpace) -> dict[str, Any]:
    """A config's values (JSON form) of the params the table does not vary."""
    return {f"{comp}.{name}": value for comp, params in data.items()
            for name, value in params.items() if f"{comp}.{name}" not in space.params}


def _count(stats: dict[str, float], rec: Any, spent: float) -> None:
    """Steps by outcome (accepted, validated, skipped, validation stopped early) and the runs
    spent so far."""
    stats["steps"] = stats.get("steps", 0) + 1
    validated = rec.val_after is not None
    stopped = rec.state is StepState.STOPPED_EARLY
    for name, hit in (("accepted", rec.accepted), ("validated", validated),
                      ("skipped", not validated), ("stopped_early", stopped)):
        stats[name] = stats.get(name, 0) + int(bool(hit))
    stats["spent"] = spent


def _check_split(job: Any, split: Split, questions: Sequence[str]) -> None:
    for name in ("train", "val", "test"):
        want = [questions[i] for i in getattr(split, name)]
        if [e.id for e in getattr(job, name)] != want:
            raise ConfigError(f"replay comparison: the run config's {name} split differs from "
                              "the lookup's (pool order changed?)")
