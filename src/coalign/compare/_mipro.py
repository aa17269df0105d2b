"""DSPy's MIPROv2 as a comparison method on a replay table.

The real ``dspy.MIPROv2`` (its Optuna TPE over instruction and demo-set indices, minibatches,
periodic full evaluations) runs on the seed's train / val questions, with its two proposal
steps replaced: the instruction candidates and demo-set candidates of each LLM component are
the distinct instructions and demo sets of that component's Text candidates in the table, so
no proposer or bootstrap call is made. Every other param stays at the table's start.

A program run is the coalign system itself (``System.run`` on the table's ``ReplayLM``) under
the instructions and demos MIPRO set on the predictors: the adapter's predictor walk would call
an LLM step its component skips (code_gen's reviser once the tests pass) and refuse the start.
Instructions × demo sets can pair values the table never built; such a run's request is refused
by the table, never answered: counted, scored 0 (DSPy's failure score) and charged one run, as
live it would have cost one. Cost: coalign's unit, one equivalent full-system run per program
run, minibatch runs included (every component executes once; no DAG here routes).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coalign.compare._lookup import Lookup, Split, Trajectory
from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.errors import ConfigError
from coalign.pairs import canonical_json
from coalign.params import TextValue
from coalign.tables import CandidateSpace, ReplayMiss, Table, config_indices, pool_examples

NAME = "dspy miprov2"
STEPS = 5  # MIPROv2's minibatch_full_eval_steps default: a full evaluation every 5 trials


class _Spent(BaseException):
    """The next evaluation does not fit the budget. A BaseException: DSPy's evaluation and
    Optuna's trial loop turn an ``Exception`` into a 0 score or a failed trial and go on."""


def mipro_method(table: Path, questions: Sequence[str], *,
                 minibatch_size: int = 35) -> MiproMethod:
    """A ``Method`` running MIPROv2 on ``table``; ``questions``: the lookup's question ids in
    its order. ``minibatch_size``: MIPRO's (35 by default); trials use minibatches only when
    the validation set is larger."""
    from coalign.optimize import llm_components  # a missing extra or a routed DAG: 1 line

    space = CandidateSpace.load(Path(table))
    llm = {c.name for c in llm_components(space.task().system)}
    if not any(k.partition(".")[0] in llm and k.endswith(".prompt") for k in space.params):
        raise ConfigError(f"table {table}: MIPROv2 tunes LLM prompts (Text params) and this "
                          "space tables none")
    return MiproMethod(Path(table), space, tuple(questions), minibatch_size)


@dataclass(frozen=True)
class MiproMethod:
    """MIPROv2 as a comparison method; a plain value, so seeds can run in worker processes."""

    table: Path
    space: CandidateSpace
    questions: tuple[str, ...]
    minibatch_size: int = 35

    def anytime(self, n_val: int) -> bool:
        """Whether one run at the largest budget gives every smaller budget's answer: yes
        without minibatches (every trial is a full evaluation, TPE's draws do not depend on
        the trial count); with them a run sized for B ends on a full evaluation of its own."""
        return n_val <= self.minibatch_size

    def plan(self, limit: float, n_val: int) -> int:
        """The most trials whose MIPRO schedule (the default program on val, then a minibatch
        or full evaluation per trial and a full one every ``STEPS`` trials and at the end)
        fits ``limit`` runs."""
        def cost(t: int) -> float:
            if n_val <= self.minibatch_size:
                return n_val * (1 + t)
            return n_val * (1 + -(-t // STEPS)) + t * self.minibatch_size

        trials = 0
        while cost(trials + 1) <= limit:
            trials += 1
        return trials

    def __call__(self, lookup: Lookup, split: Split, limit: float, seed: int) -> Trajectory:
        import dspy

        from coalign.optimize import EXAMPLE_ID, CoalignDSPyLM, CoalignEngine

        table = Table(self.table)
        task = self.space.task(finite=False)  # off-table prompts reach the table and are refused
        start = SystemConfig.from_json(task.system,
                                       next(self.space.configs(self.space.task())).to_json())
        by_id = {e.id: e for e in pool_examples(self.space)}
        runtime = table.runtime(max_workers=1)
        run = _Run(task, start, runtime, by_id, self.space, lookup)
        program = _program(run)
        examples = [[dspy.Example(**by_id[self.questions[q]].inputs,
                                  **{EXAMPLE_ID: self.questions[q]})
                     .with_inputs(*task.system.inputs, EXAMPLE_ID) for q in part]
                    for part in (split.train, split.val)]
        trajectory = Trajectory(NAME)
        n_val, trials = len(split.val), self.plan(limit, len(split.val))
        # an LM over the table: a proposal or bootstrap call, were one made, would be refused
        lm = CoalignDSPyLM(CoalignEngine(runtime, next(iter(runtime.lms))))
        instructions, demo_sets = _candidates(program, self.space, task)
        opt = dspy.MIPROv2(metric=lambda gold, pred, trace=None: float(pred.reward),
                           prompt_model=lm, task_model=lm, auto=None,
                           num_candidates=max(map(len, [*instructions, *demo_sets])),
                           max_bootstrapped_demos=max([1, *(len(d) for s in demo_sets for d in s)]),
                           max_labeled_demos=0, num_threads=1, seed=seed)
        opt._bootstrap_fewshot_examples = lambda *a, **k: demo_sets
        opt._propose_instructions = lambda *a, **k: dict(enumerate(instructions))
        search = opt._optimize_prompt_parameters

        def metered(program: Any, instr: Any, demos: Any, evaluate: Any, *rest: Any) -> Any:
            def watched(candidate: Any, devset: Sequence[Any], **kw: Any) -> Any:
                if run.spent + len(devset) > limit + 1e-9:  # a run costs at most one
                    raise _Spent
                result = evaluate(candidate, devset=devset, display_progress=False, **kw)
                full = len(devset) == n_val
                _bump(trajectory.stats, "full_evals" if full else "minibatches")
                if full:  # MIPRO's answer so far is the best of its full evaluations
                    config = run.config(candidate)
                    score = sum(float(r[2]) for r in result.results) / n_val
                    if config is None:
                        _bump(trajectory.stats, "off_table_full_evals")
                    else:
                        trajectory.trials.append((run.spent, config, score))
                return result
            return search(program, instr, demos, watched, *rest)

        opt._optimize_prompt_parameters = metered
        log = logging.getLogger("dspy")  # MIPRO logs every trial at INFO: quiet over many seeds
        level = log.level
        log.setLevel(logging.WARNING)
        with dspy.context(lm=lm):
            try:
                opt.compile(program, trainset=examples[0], valset=examples[1],
                            num_trials=trials, minibatch=n_val > self.minibatch_size,
                            minibatch_size=self.minibatch_size,
                            minibatch_full_eval_steps=STEPS)
            except _Spent:
                trajectory.stats["stopped_by_budget"] = 1
            except ValueError as exc:  # on a small space MIPRO runs out of programs it has not
                if "No valid program found" not in str(exc):  # fully evaluated and gives up:
                    raise  # its answer is the best of those evaluations, as at any stop
                trajectory.stats["exhausted"] = 1
            finally:
                log.setLevel(level)
        trajectory.stats.update(planned_trials=trials, refused=run.refused, spent=run.spent)
        return trajectory


class _Run:
    """One MIPRO run's system on replay, its meter and its refusals (every copy of the program
    closes over it: MIPRO deep-copies programs)."""

    def __init__(self, task: Any, start: SystemConfig, runtime: Any, by_id: dict[str, Any],
                 space: CandidateSpace, lookup: Lookup) -> None:
        self.task, self.start, self.runtime, self.by_id = task, start, runtime, by_id
        self.space, self.lookup = space, lookup
        self.account = CostAccount([c.name for c in task.system.components])
        self.refused = 0

    @property
    def spent(self) -> float:
        return self.account.equivalent_runs() + self.refused

    def config(self, program: Any) -> int | None:
        """The lookup's index of the program's config; None for a pairing the table lacks."""
        from coalign.optimize import from_dspy_program

        data = from_dspy_program(program, self.task.system, self.start).to_json()
        try:
            picks = config_indices(data, self.space)
        except StopIteration:
            return None
        return self.lookup.config([picks[s] for s in self.lookup.slots])


def _program(run: _Run) -> Any:
    import dspy

    from coalign.optimize import EXAMPLE_ID, CoalignProgram, from_dspy_program, to_dspy_program

    class TableProgram(CoalignProgram):
        """Predictors hold MIPRO's choices; a run is the coalign system under them."""

        def forward(self, **inputs: Any) -> Any:
            example = run.by_id[inputs[EXAMPLE_ID]]
            config = from_dspy_program(self, run.task.system, run.start)
            try:
                trace = run.task.system.run(example.id, example.inputs, config, run.runtime)
            except ReplayMiss:  # refused by the table, never answered
                run.refused += 1
                return dspy.Prediction(reward=0.0, refused=True)
            run.account.add_traces("mipro", [trace])
            return dspy.Prediction(reward=run.task.score(trace, example).reward or 0.0)

    return to_dspy_program(run.task.system, run.start, run.runtime, cls=TableProgram)


def _candidates(program: Any, space: CandidateSpace, task: Any
                ) -> tuple[list[list[str]], list[list[list[Any]]]]:
    """Per predictor, in MIPRO's order: the distinct instructions and demo sets of its
    component's Text candidates (the start's first, as MIPRO's index 0 is the program's own);
    a component without tabled candidates keeps its start alone."""
    import dspy

    instructions, demo_sets = [], []
    for name, _ in program.named_predictors():
        spec = task.system.component(name).params["prompt"]
        raw = space.params.get(f"{name}.prompt", [spec.to_json(spec.default)])
        values = [TextValue.from_json(v) for v in raw]
        instructions.append(list(dict.fromkeys(v.instruction for v in values)))
        demos = {canonical_json(v.to_json()["demos"]): v.demos for v in values}
        demo_sets.append([[dspy.Example(**d) for d in ds] for ds in demos.values()])
    return instructions, demo_sets


def _bump(stats: dict[str, float], key: str) -> None:
    stats[key] = stats.get(key, 0) + 1
