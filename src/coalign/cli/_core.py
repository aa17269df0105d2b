"""``coalign evaluate`` and ``coalign demo``."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from coalign.cli._app import app
from coalign.cli._endpoint import CONCURRENCY, RAY, RETRIES, TIMEOUT, endpoint_settings
from coalign.config import SystemConfig, read_text_file
from coalign.errors import ConfigError
from coalign.executors import ExecutorSpec, make_executor
from coalign.export import LoadedSystem, load_system
from coalign.imports import check_metric, load_task
from coalign.lm import EndpointSettings
from coalign.runner import (
    CACHE_NAME,
    REPLAY,
    EvalResult,
    build_runtime,
    evaluate,
    load_data,
)
from coalign.store import RunStore
from coalign.systems import models_of
from coalign.task import Task

console = Console()


def table_task(system: str, lm: str) -> Task:
    """The task a replay table was built for (with the system options of its space)."""
    from coalign.tables import CandidateSpace

    space = CandidateSpace.load(Path(lm[len(REPLAY):]))
    if space.system != system:
        raise ConfigError(f"replay table {lm[len(REPLAY):]} is for system {space.system!r}, "
                          f"not {system!r}")
    return space.task()


def read_system_config(task: Task, path: Path) -> SystemConfig:
    """The system config in the JSON file ``path``; each failure is one line naming the file."""
    text = read_text_file(path, "config file")
    try:
        return SystemConfig.from_json(task.system, json.loads(text))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid JSON: {exc.msg}") from None
    except ConfigError as exc:
        raise ConfigError(f"config file {path}: {exc}") from None


def run_evaluation(task: Task, data: str, limit: int | None, run_dir: Path, workers: int,
                   seed: int, config_path: Path | None, lm: str | None = None,
                   endpoint: EndpointSettings | None = None, *,
                   system: str = "", metric: str | None = None,
                   ray: str | None = None) -> EvalResult:
    """Evaluate ``task`` on ``data``; ``system`` and ``metric`` as the user named them (a
    metric from their own code is tried on one example before anything is written).
    ``ray``: a Ray cluster address; ``workers`` actors per model then serve the calls."""
    examples, data_read = load_data(data, limit, seed)
    if not examples:
        raise ConfigError(f"dataset {data!r} has no examples")
    task.check_inputs(examples, repr(data))
    check_metric(task, examples[0], system or task.system.name, metric)
    # a plain config mapping, or a file from `coalign export` (with its selectors)
    loaded = (LoadedSystem(task.system.default_config()) if config_path is None
              else load_system(config_path, task))
    console.print(Text(f"data: {data_read}, {len(examples)} examples"))
    store = RunStore(run_dir)
    store.set_meta("system", task.system.name)
    # a replay table answers from here in microseconds: nothing to send to Ray actors
    executor = make_executor(ExecutorSpec(ray=None if lm else ray), workers, endpoint)
    runtime, _ = build_runtime(models_of(task), run_dir / CACHE_NAME, max_workers=workers,
                               seed=seed, lm=lm, endpoint=endpoint, executor=executor)
    with executor, Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                  transient=True) as bar:
        # the description column reads markup: a data path is escaped
        job = bar.add_task(escape(f"{task.system.name} on {data}"), total=len(examples))
        result = evaluate(task, examples, loaded.config, loaded.runtime(runtime), store,
                          tag=loaded.tag, on_done=lambda t: bar.advance(job))
    store.close()
    return result


def print_result(title: str, task: Task, result: EvalResult) -> None:
    s = result.summary()
    table = Table(title=Text(title))  # titles name data files: text, not markup
    table.add_column("quantity")
    table.add_column("value", justify="right")
    rows = [(f"mean {task.metric_name}", f"{s['mean_reward']:.4f}"),
            ("examples", str(s["examples"])),
            ("resumed from the run store", str(s["resumed"])),
            ("LLM calls", str(s["llm_calls"])),
            ("cache hits", str(s["cache_hits"])),
            ("prompt tokens", str(s["prompt_tokens"])),
            ("completion tokens", str(s["completion_tokens"])),
            ("equivalent full-system runs", f"{s['equiv_runs']:.2f}"),
            ("wall time (s)", f"{s['wall_s']:.1f}")]
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)


@app.command("evaluate")
def evaluate_cmd(
    system: str = typer.Argument(..., help="system name, e.g. multihop_qa, or module:factory"),
    data: str = typer.Option(
        "world", help="world | hotpotqa | musique | pubmedqa | mbpp | amazon | FILE (format "
                      "detected: "
                      "HotpotQA, 2Wiki, MuSiQue, PubMedQA, MBPP, HumanEval, coalign rows)"),
    metric: str = typer.Option(None, help="f1 | em | accuracy | module:function (default: the "
                                          "system's)"),
    limit: int = typer.Option(20, min=1, help="number of examples"),
    run_dir: Path = typer.Option(Path("runs/evaluate"), help="run store + LLM cache folder"),
    model: str = typer.Option("qwen2.5-0.5b", help="task model (name or spec)"),
    config: Path = typer.Option(None, help="system config JSON (default: unoptimized)"),
    workers: int = typer.Option(2, min=1, help="examples run concurrently"),
    seed: int = typer.Option(0),
    json_out: Path = typer.Option(None, "--json", help="write the summary as JSON"),
    lm: str = typer.Option(None, "--lm", help="replay:DIR answers every LLM call from the "
                           "replay table in DIR (no model is loaded)"),
    timeout: float = TIMEOUT,
    retries: int = RETRIES,
    concurrency: int = CONCURRENCY,
    ray: str | None = RAY,
) -> None:
    """Evaluate a system on a dataset; rerunning the same command resumes with no repeated call."""
    endpoint = endpoint_settings(timeout, retries, concurrency)
    if lm and lm.startswith(REPLAY) and metric is not None:
        raise ConfigError("--metric is not used with --lm replay: (the table's rewards are its "
                          "system's metric)")
    task = (table_task(system, lm) if lm and lm.startswith(REPLAY)
            else load_task(system, model, metric))
    result = run_evaluation(task, data, limit, run_dir, workers, seed, config, lm, endpoint,
                            system=system, metric=metric, ray=ray)
    print_result(f"{system} on {data}", task, result)
    if json_out is not None:
        scores = {t.example_id: t.reward for t in result.traces}  # per example: paired checks
        json_out.write_text(json.dumps({**result.summary(), "scores": scores}, indent=2))
