"""``coalign search``: multi-objective beam search over prompts on a classification task."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from coalign.cli._app import app, fail
from coalign.errors import CoalignError

TASKS = ("pubmedqa",)


def _fingerprint(settings: dict) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


@app.command("search")
def search(
    out: Annotated[
        Path, typer.Option("--out", help="Run folder: search_state.json, archive, viz.")
    ],
    task: Annotated[str, typer.Option(help=f"Task; one of {', '.join(TASKS)}.")] = "pubmedqa",
    lm: Annotated[str, typer.Option(help="Task model spec.")] = "llamacpp:qwen2.5-0.5b",
    reviewer_lm: Annotated[
        str, typer.Option(help="Reviewer model spec (default: the task model).")
    ] = "",
    cache: Annotated[
        Path | None, typer.Option(help="Response cache (default: OUT/lm_cache.sqlite).")
    ] = None,
    data: Annotated[Path | None, typer.Option(help="PubMedQA JSON (default: shared data).")] = None,
    n_dev: Annotated[int, typer.Option(min=1, help="Dev questions each prompt is scored on.")] = 30,
    n_pool: Annotated[
        int, typer.Option(min=2, help="Questions the reviewer may use as demos.")
    ] = 40,
    context_words: Annotated[
        int, typer.Option(min=10, help="Context words kept per question.")
    ] = 100,
    seed: Annotated[int, typer.Option(help="Seed of the dev/pool split.")] = 0,
    beam_width: Annotated[int, typer.Option(min=1)] = 3,
    budget: Annotated[
        int, typer.Option(min=1, help="Evaluations before convergence is allowed.")
    ] = 60,
    max_rounds: Annotated[int, typer.Option(min=1)] = 50,
    stagnation_limit: Annotated[int, typer.Option(min=1)] = 3,
    convergence_limit: Annotated[int, typer.Option(min=1)] = 5,
    epsilon: Annotated[float, typer.Option(min=0.0)] = 0.001,
    target_quality: Annotated[
        float | None, typer.Option(help="Target quality change (fraction).")
    ] = 0.05,
    target_cost: Annotated[float | None, typer.Option(help="Target cost change (fraction).")] = 0.0,
) -> None:
    """Search prompts for PubMedQA; resumes automatically from OUT/search_state.json."""
    if task not in TASKS:
        fail(f"--task: unknown task {task!r}; valid tasks: {', '.join(TASKS)}")
    # the heavy imports stay here so `coalign --help` is fast
    from coalign.lm import make_lm
    from coalign.search import (
        BeamSearch,
        LLMReviewer,
        PubMedQATask,
        SearchState,
        SearchStore,
        Targets,
        base_spec,
        load_sets,
    )

    settings = dict(
        task=task,
        lm=lm,
        reviewer_lm=reviewer_lm or lm,
        n_dev=n_dev,
        n_pool=n_pool,
        context_words=context_words,
        seed=seed,
        data=str(data or ""),
        beam_width=beam_width,
        budget=budget,
        max_rounds=max_rounds,
        stagnation_limit=stagnation_limit,
        convergence_limit=convergence_limit,
        epsilon=epsilon,
        target_quality=target_quality,
        target_cost=target_cost,
    )

    def new_state() -> SearchState:
        try:
            st = SearchState(
                run_id=out.name,
                fingerprint=_fingerprint(settings),
                seed=seed,
                evaluation_budget=budget,
                max_rounds=max_rounds,
                stagnation_limit=stagnation_limit,
                convergence_limit=convergence_limit,
                epsilon=epsilon,
                targets=Targets(quality_min=target_quality, cost_max=target_cost),
                base_spec=base_spec().to_dict(),
            )
            st.algorithm_state.beam_width = beam_width
            st.algorithm_state.epsilon_min = min(st.algorithm_state.epsilon_min, epsilon)
        except ValidationError as exc:
            err = exc.errors()[0]
            fail(
                f"search settings: {err['msg']}; pick --convergence-limit above --stagnation-limit"
            )
        return st

    store = SearchStore(out)
    started = time.perf_counter()
    try:
        dev, pool = load_sets(n_dev, n_pool, seed=seed, path=str(data) if data else None)
        cache_path = cache or out / "lm_cache.sqlite"
        task_lm = make_lm(lm, cache=cache_path)
        rev_lm = (
            task_lm
            if not reviewer_lm or reviewer_lm == lm
            else make_lm(reviewer_lm, cache=cache_path)
        )
        evaluator = PubMedQATask(task_lm, dev, pool, context_words=context_words)
        mutator = LLMReviewer(rev_lm, evaluator)
        resumed = store.exists()
        engine = BeamSearch.open(store, evaluator, mutator, new_state, log=typer.echo)
        if resumed:
            typer.echo(f"resuming {store.state_path} at round {engine.state.current_round}")
        state = engine.run()
    except CoalignError as exc:
        fail(str(exc))
    except ValueError as exc:  # e.g. more dev + pool questions than the file holds
        fail(f"search: {exc}")
    _report(state, store, time.perf_counter() - started)


def _report(state, store, wall_s: float) -> None:
    base = state.baseline
    typer.echo(
        f"\nbaseline: accuracy {base.get('accuracy', base['quality']):.3f}, "
        f"{base.get('tokens_per_example', base['cost']):.1f} tokens/question"
    )
    typer.echo("round  hypervolume  rel.improvement  stagnation  elite")
    for r in state.round_history:
        rel = "n/a" if r.relative_improvement is None else f"{r.relative_improvement:+.4f}"
        typer.echo(
            f"{r.round:>5}  {r.hypervolume:11.5f}  {rel:>15}  {r.stagnation_count:>10}  "
            f"{' '.join(r.elite)}"
        )
    typer.echo("front (quality change, cost change, accuracy, tokens/question):")
    for c in state.elite_candidates():
        typer.echo(
            f"  {c.prompt_version:>4} parent {c.parent_version:>4}  "
            f"{c.quality_score:+.3f}  {c.cost:+.3f}  "
            f"{c.metrics.get('accuracy', float('nan')):.3f}  "
            f"{c.metrics.get('tokens_per_example', float('nan')):.1f}"
        )
    typer.echo(
        f"converged: {state.convergence_reason}; evaluated "
        f"{state.total_evaluated()} candidates; wall {wall_s:.1f} s (this process)"
    )
    typer.echo(f"viz: {store.viz_path.resolve()}")
