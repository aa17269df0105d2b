"""DSPy's MIPROv2 and GEPA sized to a budget in equivalent full-system runs (see ``_dspy``
for the program adapter and the budget rule), with the result mapped back to a config."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coalign.component import render_value
from coalign.config import SystemConfig
from coalign.data import Example
from coalign.errors import ConfigError
from coalign.lm import LM
from coalign.optimize._baselines import SearchResult
from coalign.optimize._dspy import (  # dspy's names too: its import error names the extra
    EXAMPLE_ID,
    METHODS,
    PROPOSER,
    REFLECT_CHARS,
    AdapterParseError,
    CoalignDSPyLM,
    CoalignEngine,
    DSPyMeter,
    InstructionProposer,
    dspy,
    field_header_pattern,
    from_dspy_program,
    llm_components,
    to_dspy_program,
)
from coalign.runtime import Runtime
from coalign.system import System
from coalign.task import Task


@dataclass
class DSPyResult(SearchResult):
    """``best_score`` and ``tried`` are DSPy's own validation scores of its candidates."""

    method: str = ""
    plan: dict[str, Any] = field(default_factory=dict)
    budget_runs: float = 0.0

    @property
    def overrun(self) -> float:
        return max(0.0, self.equiv_runs - self.budget_runs)


def plan_mipro(budget_runs: float, n_train: int, n_val: int, max_demos: int) -> dict[str, Any]:
    """MIPROv2 settings whose worst case fits the budget: the default program on val, candidates
    − 1 bootstrapped demo sets (≤ ``bootstrap_train`` runs each; set 0 is zero-shot), one proposal
    per candidate and predictor (= candidates runs), then trials on val (or minibatches plus a full
    val every 5 trials). The most candidates (6 down to 2) keeping ≥ 1.5 trials each win."""
    demos = min(3, max_demos)  # MIPRO's default in-context count, within the Text params' limit
    boot = min(n_train, 4 * max(demos, 1))
    minibatch, size, steps = n_val > 35, 35, 5

    def cost(c: int, t: int) -> float:
        fixed = n_val + (c - 1) * boot + c
        if not minibatch:
            return fixed + t * n_val
        return fixed + t * size + (t // steps + (1 if t % steps else 0)) * n_val

    for c in range(6, 1, -1):
        trials = 0
        while cost(c, trials + 1) <= budget_runs:
            trials += 1
        if trials >= (math.ceil(1.5 * c) if c > 2 else 1):
            return {"num_candidates": c, "num_trials": trials, "max_demos": demos,
                    "bootstrap_train": boot, "minibatch": minibatch, "minibatch_size": size,
                    "full_eval_steps": steps, "planned_runs": cost(c, trials)}
    raise ConfigError(f"budget_runs={budget_runs:g} is too small for MIPROv2 on {n_val} val "
                      f"examples; it needs at least {cost(2, 1):g} equivalent runs")


def plan_gepa(budget_runs: float, n_train: int, n_val: int) -> dict[str, Any]:
    """GEPA settings: a metric-call cap at the budget, and the worst-case cost of one iteration
    (parent and child minibatches, one reflection, the child's full val evaluation) that the stop
    callback keeps in reserve."""
    mb = min(3, n_train)
    iteration = 2 * mb + n_val + 1
    if budget_runs < n_val + iteration:
        raise ConfigError(f"budget_runs={budget_runs:g} is too small for GEPA on {n_val} val "
                          f"examples; it needs at least {n_val + iteration:g} equivalent runs")
    return {"max_metric_calls": int(budget_runs), "reflection_minibatch_size": mb,
            "iteration_runs": iteration}


class _LenientChatAdapter(dspy.ChatAdapter):
    """For proposal and reflection calls: a small local model often skips DSPy's
    ``[[ ## field ## ]]`` markers, so a reply to a one-output signature is taken whole."""

    def parse(self, signature: Any, completion: str) -> dict[str, Any]:
        try:
            return super().parse(signature, completion)
        except AdapterParseError:
            if len(signature.output_fields) != 1:
                raise
            return {next(iter(signature.output_fields)): field_header_pattern.sub("", completion)
                    .strip()}


class _CompactProposer(InstructionProposer):
    """GEPA's default proposer, shown each reflective example's fields rendered as coalign renders
    them and cut to ``REFLECT_CHARS``: raw passages would overflow a small model's context."""

    def __call__(self, candidate: dict[str, str], reflective_dataset: Mapping[str, Sequence],
                 components_to_update: list[str]) -> dict[str, str]:
        def cut(v: Any) -> Any:
            if isinstance(v, Mapping):
                return {k: render_value(x, REFLECT_CHARS) for k, x in v.items()}
            return render_value(v, REFLECT_CHARS)

        compact = {name: [{k: cut(v) for k, v in row.items()} for row in rows]
                   for name, rows in reflective_dataset.items()}
        return super().__call__(candidate, compact, components_to_update)


def dspy_optimize(task: Task, train: Sequence[Example], val: Sequence[Example], runtime: Runtime,
                  budget_runs: float, *, method: str = "mipro", seed: int = 0,
                  prompt_model: str | LM | None = None, config: SystemConfig | None = None,
                  proposal_max_tokens: int = 256) -> DSPyResult:
    """Optimize the system's ``Text`` params with DSPy ``method`` within ``budget_runs``.

    ``prompt_model`` proposes instructions (MIPRO) or reflects (GEPA): a model name in the
    runtime, or an LM (e.g. the same local model with a longer context); default: the first LLM
    component's model. Everything but the prompts stays as in ``config``.
    """
    if method not in METHODS:
        raise ConfigError(f"unknown DSPy method {method!r}; use one of {list(METHODS)}")
    system = task.system
    config = config if config is not None else system.default_config()
    llm = llm_components(system)
    meter = DSPyMeter([c.name for c in llm], budget_runs)
    task_model = str(config[llm[0].name].get("model", llm[0].model))
    prompt_runtime, prompt_name = runtime, prompt_model or task_model
    if prompt_model is not None and not isinstance(prompt_model, str):
        prompt_runtime = dataclasses.replace(runtime, lms={**runtime.lms, PROPOSER: prompt_model})
        prompt_name = PROPOSER
    task_lm = CoalignDSPyLM(CoalignEngine(runtime, task_model, meter))
    prompt_lm = CoalignDSPyLM(CoalignEngine(prompt_runtime, str(prompt_name), meter),
                              temperature=1.0, max_tokens=proposal_max_tokens)
    by_id = {e.id: e for e in (*train, *val)}

    def score(gold: Any, pred: Any, trace: Any = None) -> float:
        return float(task.metric(pred[system.output], by_id[gold[EXAMPLE_ID]]))

    def feedback(gold: Any, pred: Any, trace: Any = None, pred_name: Any = None,
                 pred_trace: Any = None) -> Any:  # GEPA reflects on text feedback with the score
        s, target = score(gold, pred), by_id[gold[EXAMPLE_ID]].target
        out = render_value(pred[system.output], 200)
        text = f"{task.metric_name} = {s:.2f} for the output {out!r}"
        if target is not None:
            text += f"; the expected output was {render_value(target, 200)!r}"
        return dspy.Prediction(score=s, feedback=text + ".")

    dtrain, dval = _dspy_examples(train, system), _dspy_examples(val, system)
    program = to_dspy_program(system, config, runtime, meter)
    threads = max(1, runtime.max_workers)
    with dspy.context(lm=task_lm, adapter=_LenientChatAdapter(), disable_history=True):
        if method == "mipro":
            plan = plan_mipro(budget_runs, len(train), len(val),
                              min(c.params["prompt"].max_demos for c in llm))
            opt = dspy.MIPROv2(metric=score, prompt_model=prompt_lm, task_model=task_lm,
                               auto=None, num_candidates=plan["num_candidates"],
                               max_bootstrapped_demos=plan["max_demos"], max_labeled_demos=0,
                               num_threads=threads, seed=seed)
            # labeled demos would lack the intermediate fields; the program- and data-aware
            # proposers would show the proposer this adapter's code and raw passages
            best = opt.compile(program, trainset=dtrain[: plan["bootstrap_train"]], valset=dval,
                               num_trials=plan["num_trials"], minibatch=plan["minibatch"],
                               minibatch_size=plan["minibatch_size"],
                               minibatch_full_eval_steps=plan["full_eval_steps"],
                               program_aware_proposer=False, data_aware_proposer=False)
            # DSPy's Evaluate reports percentages; coalign's scores are mean metric values
            best_score = float(getattr(best, "score", math.nan)) / 100
            tried = [(d["program"], d["score"] / 100)
                     for d in getattr(best, "candidate_programs", [])]
        else:
            plan = plan_gepa(budget_runs, len(train), len(val))
            reserve = plan["iteration_runs"]  # stop unless a worst-case iteration still fits
            opt = dspy.GEPA(metric=feedback, max_metric_calls=plan["max_metric_calls"],
                            reflection_lm=prompt_lm,
                            instruction_proposer=_CompactProposer(adapter=_LenientChatAdapter()),
                            reflection_minibatch_size=plan["reflection_minibatch_size"],
                            num_threads=threads, seed=seed, track_stats=True,
                            gepa_kwargs={"stop_callbacks": [
                                lambda _: meter.runs + reserve > budget_runs]})
            best = opt.compile(program, trainset=dtrain, valset=dval)
            res = best.detailed_results
            best_score = float(res.val_aggregate_scores[res.best_idx])
            tried = list(zip(res.candidates, res.val_aggregate_scores, strict=True))
    return DSPyResult(from_dspy_program(best, system, config), best_score,
                      [(from_dspy_program(p, system, config).digest, float(s)) for p, s in tried],
                      meter.account, method=method, plan=plan, budget_runs=budget_runs)


def _dspy_examples(examples: Sequence[Example], system: System) -> list[Any]:
    return [dspy.Example(**{f: e.inputs[f] for f in system.inputs}, **{EXAMPLE_ID: e.id})
            .with_inputs(*system.inputs) for e in examples]
