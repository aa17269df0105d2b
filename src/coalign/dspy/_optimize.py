"""``optimize``: coalign's loop on a user's own DSPy program, the result written back into it.

The program becomes a :class:`ProgramSystem` (one component per named predictor, its
instruction and demos a ``Text`` param), the DSPy metric the global reward, and the loop runs
unchanged: stage-1 rollouts label each predictor's outputs by the program's final score, local
rewards rank candidate instructions and demos, and a change is kept only if the whole program
scores strictly higher on the validation set. The final values are written into the program's
predictors, so ``program.save()`` and ``dspy.Evaluate`` see the optimized program.
"""

from __future__ import annotations

import hashlib
import math
import random
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from coalign.config import SystemConfig
from coalign.data import Example
from coalign.dspy._components import PROMPT, write_back
from coalign.dspy._lm import dspy
from coalign.dspy._stock import LMWrappers
from coalign.dspy._system import ERROR, PredictorFailed, ProgramSystem
from coalign.errors import ConfigError
from coalign.optimize import BudgetSpec, Gate, Ledger, LoopSettings, Optimizer, StepRecord
from coalign.pairs import canonical_json
from coalign.rewards import LocalRewardModel, make_backbone
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.task import Task

# ``progress(phase, done, total)``: the loop's own progress callback, plus phase "steps"
Progress = Callable[[str, int, int], None]


@dataclass
class ProgramResult:
    """What :func:`optimize` did; ``program`` is the caller's, now holding ``config``."""

    program: Any
    config: SystemConfig
    val_before: float  # mean metric on valset, starting program (coalign's runs)
    val_after: float
    history: list[StepRecord]  # every step in the run dir's ledger (a resumed run's too)
    ledger: Ledger
    run_dir: Path
    changed: list[str]  # predictor paths whose instruction or demos changed


def optimize(program: Any, trainset: Sequence[Any], metric: Callable[..., Any], *,
             valset: Sequence[Any] | None = None,
             budget: int | Mapping[str, Any] | BudgetSpec | None = None,
             lm: Any = None, proposer: Any = None,
             run_dir: str | Path | None = None, seed: int = 0, backbone: str = "minilm",
             on_step: Callable[[StepRecord], None] | None = None,
             progress: Progress | None = None) -> ProgramResult:
    """Optimize the instructions and demos of ``program``'s named predictors with coalign.

    Args:
        program: a ``dspy.Module``; any number of named predictors, any control flow.
        trainset, valset: ``dspy.Example`` lists built with ``.with_inputs(...)``; without a
            valset, half of the trainset (seeded) validates.
        metric: a DSPy metric, ``metric(example, prediction, trace=None) -> float | bool``.
        budget: loop iterations (an int), or budget fields by name (``iterations``,
            ``search_size``, ``fresh_inputs``, ``rollout_n``, ``text_candidates``, ...).
        lm: the LM serving the predictors (default: ``dspy.settings.lm``): any ``dspy.LM``
            or ``dspy.BaseLM`` (called as it is, its cache included), or a :class:`CoalignLM`;
            a predictor with its own ``lm`` keeps it.
        proposer: an LM proposing instructions, of the same kinds (default: none; edits and
            demos only).
        progress: ``progress(phase, done, total)`` hears each rollout and validation input
            finished, and each step (phase ``"steps"``).
        on_step: called with each step's record.
        run_dir: where the run store lives (resumable with the same arguments); default: a
            new temporary directory.

    Returns:
        The result; ``program`` itself now holds the best values found.
    """
    wrap = LMWrappers()
    lm = wrap(lm if lm is not None else dspy.settings.lm, "lm")
    spec = budget_spec(budget)
    train, val, gold = _examples(trainset, valset, seed)
    names = sorted({k for e in (*train, *val) for k in e.inputs})
    with ProgramSystem(program, names, lm, wrappers=wrap) as system:
        task = Task(system, _reward(metric, gold), getattr(metric, "__name__", "metric"))
        lms = {name: m.backend for name, m in system.models.items()}
        proposer_name = None
        if proposer is not None:
            proposer_lm = wrap(proposer, "proposer")
            proposer_name = proposer_lm.coalign_name
            lms[proposer_name] = proposer_lm.backend
        # one worker: DSPy's settings and the tracer's run are per thread of forward
        runtime = Runtime(lms=lms, max_workers=1, seed=seed)
        reward = LocalRewardModel(make_backbone(backbone),
                                  {c.name: c.description for c in system.components})
        store = _store(run_dir, system, train, val, spec, seed, proposer_name)
        try:
            settings = LoopSettings(**spec.model_dump(), gate=Gate("strict", seed=seed),
                                    proposer=proposer_name, seed=seed)
            opt = Optimizer(task, train, val, runtime, store, reward, settings)
            opt.prepare(progress=progress)
            _check_runs(opt, system)
            opt.run(_steps(on_step, progress, spec.iterations), progress=progress)
            steps = opt.history_so_far()
            # the first step was taken from the starting values (a resumed run starts later)
            before = steps[0].val_before if steps else opt.val_score
            start = system.default_config()
            write_back(system.components, {c.name: opt.config[c.name][PROMPT]
                                           for c in system.components})
            changed = [c.path for c in system.components
                       if opt.config[c.name][PROMPT] != start[c.name][PROMPT]]
            return ProgramResult(program, opt.config, before, opt.val_score, steps,
                                 opt.ledger(), store.run_dir, changed)
        finally:
            store.close()


def budget_spec(budget: int | Mapping[str, Any] | BudgetSpec | None) -> BudgetSpec:
    """``optimize``'s ``budget`` as the loop's budget fields; a bad field is one line."""
    if isinstance(budget, BudgetSpec):
        return budget
    raw = {} if budget is None else {"iterations": budget} if isinstance(budget, int) \
        else dict(budget)
    try:
        return BudgetSpec.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise ConfigError(f"budget field {loc!r}: {err['msg']}") from None


def _examples(trainset: Sequence[Any], valset: Sequence[Any] | None,
              seed: int) -> tuple[list[Example], list[Example], dict[str, Any]]:
    """coalign Examples (inputs: the DSPy example's inputs) and gold DSPy examples by id."""
    if valset is None:
        if len(trainset) < 2:
            raise ConfigError("trainset needs at least 2 examples when no valset is given")
        order = list(trainset)
        random.Random(seed).shuffle(order)
        half = len(order) // 2
        trainset, valset = order[half:], order[:half]
    gold: dict[str, Any] = {}
    out: list[list[Example]] = []
    for label, rows in (("trainset", trainset), ("valset", valset)):
        if not rows:
            raise ConfigError(f"{label} is empty")
        examples = []
        for i, row in enumerate(rows):
            if not isinstance(row, dspy.Example):
                raise ConfigError(f"{label}[{i}]: expected a dspy.Example, got "
                                  f"{type(row).__name__}")
            if not row._input_keys:
                raise ConfigError(f"{label}[{i}]: no input fields; build it with "
                                  "dspy.Example(...).with_inputs('question', ...)")
            eid = f"{label[:-3]}{i}"
            gold[eid] = row
            examples.append(Example(eid, dict(row.inputs()), None))
        out.append(examples)
    return out[0], out[1], gold


def _reward(metric: Callable[..., Any], gold: Mapping[str, Any]) -> Callable[[Any, Example],
                                                                              float]:
    """The DSPy metric as coalign's ``metric(prediction, example)``; a run whose ``forward``
    raised scores 0, as under ``dspy.Evaluate``."""
    def reward(prediction: Any, example: Example) -> float:
        if prediction is None:
            return 0.0
        pred = dspy.Prediction(**prediction) if isinstance(prediction, dict) else prediction
        score = metric(gold[example.id], pred)
        if isinstance(score, bool) or (isinstance(score, int | float) and math.isfinite(score)):
            return float(score)
        raise ConfigError(f"metric {getattr(metric, '__name__', metric)!r} returned "
                          f"{score!r}; it must return a finite number or a bool")
    return reward


def _store(run_dir: str | Path | None, system: ProgramSystem, train: list[Example],
           val: list[Example], spec: BudgetSpec, seed: int, proposer: str | None) -> RunStore:
    """The run store; one made for other arguments is refused (its ledger would not fit).
    More ``iterations`` than before are fine: the run resumes where its ledger ends."""
    path = Path(run_dir) if run_dir is not None else Path(tempfile.mkdtemp(prefix="coalign-dspy-"))
    payload = canonical_json({"program": system.name,
                              "start": system.default_config().to_json(),
                              "train": [[e.id, e.inputs] for e in train],
                              "val": [[e.id, e.inputs] for e in val],
                              "budget": spec.model_dump(exclude={"iterations"}), "seed": seed,
                              "proposer": proposer})
    digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    store = RunStore(path)
    known = store.get_meta("dspy_run_digest")
    if known is not None and known != digest:
        store.close()
        raise ConfigError(f"run dir {path} holds a run of another program, data or budget "
                          "(only iterations may grow); use a new run_dir")
    store.set_meta("dspy_run_digest", digest)
    return store


def _check_runs(opt: Optimizer, system: ProgramSystem) -> None:
    """Refuse a program that raised on every validation example: its score says nothing. When
    no reply parsed, the LM cannot keep the adapter's format, which no optimization fixes."""
    errors = [t.state.get(ERROR) for t in opt.val_traces.values()]
    if not errors or not all(errors):
        return
    if all(e.startswith(PredictorFailed.__name__) for e in errors):
        models = ", ".join(sorted(system.models))
        raise ConfigError(f"model {models}: no reply on the {len(errors)} validation examples "
                          f"followed DSPy's output format (first: {errors[0].split(': ', 1)[1]});"
                          " use an LM that keeps the adapter's [[ ## field ## ]] markers (of "
                          "the bundled models qwen2.5-0.5b or qwen2.5-1.5b; smollm2-135m does "
                          "not)")
    raise ConfigError(f"the program raised on every validation example; the first: "
                      f"{errors[0]}")


def _steps(on_step: Callable[[StepRecord], None] | None, progress: Progress | None,
           total: int) -> Callable[[StepRecord], None]:
    """``on_step`` and a ``"steps"`` progress report after each step."""
    def after(record: StepRecord) -> None:
        if on_step is not None:
            on_step(record)
        if progress is not None:
            progress("steps", record.step + 1, total)
    return after
