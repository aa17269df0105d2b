"""``coalign evaluate`` and ``coalign demo``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from coalign.backends import REPLAY, build_runtime
from coalign.cascade import evaluate_cascade
from coalign.cli._app import app, note
from coalign.cli._endpoint import CONCURRENCY, RAY, RETRIES, TIMEOUT, endpoint_settings
from coalign.config import SystemConfig, read_text_file, write_text_file
from coalign.data import DataFile
from coalign.errors import ConfigError, DataError
from coalign.executors import ExecutorSpec, make_executor
from coalign.export import FORMAT, LoadedSystem, load_system
from coalign.imports import check_metric, load_task
from coalign.lm import REMOTE, EndpointSettings
from coalign.runner import CACHE_NAME, DATASETS, EvalResult, evaluate, load_data
from coalign.store import RunStore
from coalign.systems import models_of
from coalign.task import Task

console = Console()

DEFAULT_MODEL = "qwen2.5-0.5b"  # as a run config's `model`
LIVE = "live"  # --lm live: the system's own models, over an exported system's replay table
NO_CALLS = "a replay table answers every model call here: no model is loaded or called"


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
    except RecursionError:
        raise ConfigError(f"config file {path}: JSON nested too deeply to be a system "
                          "config") from None
    except ConfigError as exc:
        raise ConfigError(f"config file {path}: {exc}") from None


def run_evaluation(task: Task, data: str | DataFile, limit: int | None, run_dir: Path,
                   workers: int, seed: int, config_path: Path | None, lm: str | None = None,
                   endpoint: EndpointSettings | None = None, *,
                   system: str = "", metric: str | None = None,
                   ray: str | None = None, notes: Sequence[str] = ()) -> EvalResult:
    """Evaluate ``task`` on ``data``; ``system`` and ``metric`` as the user named them (a
    metric from their own code is tried on one example before anything is written).
    ``ray``: a Ray cluster address; ``workers`` actors per model then serve the calls.
    ``notes`` are printed once the inputs are checked: an error stays the only line."""
    name = str(data.path) if isinstance(data, DataFile) else data
    try:
        examples, data_read = load_data(data, limit, seed)
        if not examples:
            raise ConfigError(f"dataset {name!r} has no examples")
        task.check_inputs(examples, repr(name))
    except (ConfigError, DataError) as exc:
        raise type(exc)(flag_hints(str(exc))) from None
    data_read = flag_hints(data_read)  # "records mapped by --fields"
    check_metric(task, examples[0], system or task.system.name, metric)
    # a plain config mapping, or a file from `coalign export` (with its selectors)
    loaded = (LoadedSystem(task.system.default_config()) if config_path is None
              else load_system(config_path, task))
    if lm and ray:  # the command refuses this; a caller in Python is told too
        raise ConfigError(f"--ray is not used with lm {lm}: {NO_CALLS}")
    console.print(Text(f"data: {data_read}, {len(examples)} examples"))
    store = RunStore(run_dir)
    store.set_meta("system", task.system.name)
    executor = make_executor(ExecutorSpec(ray=ray), workers, endpoint)
    runtime, _ = build_runtime(models_of(task), run_dir / CACHE_NAME, max_workers=workers,
                               seed=seed, lm=lm, endpoint=endpoint, executor=executor)
    for line in notes:
        note(line)
    with executor, Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                  transient=True) as bar:
        # the description column reads markup: a data path is escaped
        job = bar.add_task(escape(f"{task.system.name} on {name}"), total=len(examples))
        if loaded.cascade is None:
            result = evaluate(task, examples, loaded.config, loaded.runtime(runtime), store,
                              tag=loaded.tag, on_done=lambda t: bar.advance(job))
        else:
            ran = evaluate_cascade(task, examples, loaded.cascade, runtime, store,
                                   tag=loaded.tag, on_done=lambda t: bar.advance(job))
            result = ran.result
    store.close()
    if loaded.cascade is not None:
        console.print(Text(f"cascade: {ran.escalated:.0%} of examples ran a fallback; "
                           f"{ran.cost_per_query_s:.2f} model s an example over every link, "
                           f"{ran.rerun_cost_per_query_s:.2f} rerunning only what a fallback "
                           "changes"))
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


# coalign.data words its hints for a run config (`data: {path, fields}`); on this command the
# same mapping is the --fields flag
_HINTS = ((re.compile(r"a field mapping \(data: \{path, fields\}\)"),
           "any JSONL mapped by --fields NAME=KEY,... (e.g. question=q,target=answer)"),
          (re.compile(r"a run config's data: \{path, fields\}"), "--fields NAME=KEY,..."),
          (re.compile(r"\(data: \{path, fields: \{(\w+): \.\.\.\}\}\)"),
           r"(--data FILE --fields \1=KEY,...)"),
          (re.compile(r"\bdata\.fields\b"), "--fields"))


def flag_hints(message: str) -> str:
    """``message`` with its run-config hints for mapping a file's rows worded as flags."""
    for pattern, flag in _HINTS:
        message = pattern.sub(flag, message)
    return message


def parse_fields(text: str) -> dict[str, str]:
    """``--fields question=q,target=answer``: the mapping ``DataFile.fields`` takes (a system
    input, ``target`` or ``id`` -> the row key feeding it)."""
    fields: dict[str, str] = {}
    for pair in text.split(","):
        name, sep, key = (part.strip() for part in pair.partition("="))
        if not (sep and name and key):
            raise ConfigError(f"--fields {text!r}: expected NAME=KEY pairs separated by commas, "
                              "e.g. question=q,target=answer")
        if name in fields:
            raise ConfigError(f"--fields {text!r}: {name!r} is mapped twice")
        fields[name] = key
    if "target" not in fields:
        raise ConfigError(f"--fields {text!r}: map target to the row key holding the gold "
                          "answer, e.g. target=answer")
    if not set(fields) - {"target", "id"}:
        raise ConfigError(f"--fields {text!r}: map at least one system input to a row key, "
                          "e.g. question=q")
    return fields


def data_source(data: str, fields: str | None, task: Task) -> str | DataFile:
    """``--data`` as read: a named dataset or a file, or a JSONL file mapped by ``--fields``."""
    if fields is None:
        return data
    if data in DATASETS:
        raise ConfigError(f"--fields maps the rows of a JSONL file; --data {data} is a named "
                          "dataset: give --data FILE")
    mapping = parse_fields(fields)
    unread = [n for n in mapping if n not in (*task.system.inputs, "target", "id")]
    if unread:  # an input the system never reads would be dropped without a word
        raise ConfigError(f"--fields maps {unread[0]!r}, which system {task.system.name!r} does "
                          f"not read; its inputs are {list(task.system.inputs)} (plus target, id)")
    return DataFile(Path(data), mapping)


def exported(config: Path | None) -> dict | None:
    """The fields of ``config`` if it is a file from ``coalign export``; else (a plain config,
    or a file that cannot be read, reported when it is loaded) None. A peek before the task
    exists: its ``lm`` and ``model`` decide which task to load."""
    try:
        raw = json.loads(config.read_text(encoding="utf-8")) if config is not None else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    return raw if isinstance(raw, dict) and raw.get("format") == FORMAT else None


def parse_lm(flag: str) -> str | None:
    """``--lm``: ``replay:DIR`` as is, ``live`` (the system's own models) as None."""
    if flag != LIVE and not flag.startswith(REPLAY):
        raise ConfigError(f"--lm {flag!r}: expected replay:DIR (a replay table) or live (the "
                          "system's own models)")
    return None if flag == LIVE else flag


def chosen_lm(flag: str | None, export: dict | None, config: Path | None,
              notes: list[str]) -> str | None:
    """The lm to evaluate with: ``--lm`` over the exported system's own (a note says which)."""
    own = export.get("lm") if export else None
    if own is not None and not (isinstance(own, str) and own.startswith(REPLAY)):
        raise ConfigError(f"config file {config}: lm {own!r}: expected replay:DIR or null")
    if flag is None:
        if own:
            notes.append(f"evaluating on {own}, the lm of the exported system {config} "
                         "(--lm live calls the system's models)")
        return own
    lm = parse_lm(flag)
    if export is not None and lm != own:
        notes.append(f"--lm {flag} overrides the lm of the exported system {config} "
                     f"({own or LIVE})")
    return lm


def chosen_model(flag: str | None, export: dict | None, config: Path | None,
                 notes: list[str]) -> str:
    """The task model: ``--model`` over the exported system's own (a note says so)."""
    own = export.get("model") if export else None
    if flag is None:
        return own if isinstance(own, str) else DEFAULT_MODEL
    if isinstance(own, str) and flag != own:
        notes.append(f"--model {flag} overrides the model of the exported system {config} "
                     f"({own})")
    return flag


def refuse_on_replay(lm: str, flags: dict[str, object]) -> None:
    """One line naming the ``flags`` given (value not None) that replay on ``lm`` ignores."""
    given = [flag for flag, value in flags.items() if value is not None]
    if given:
        one = len(given) == 1
        raise ConfigError(f"{' and '.join(given)} {'is' if one else 'are'} not used with lm "
                          f"{lm}: {NO_CALLS}; remove {'it' if one else 'them'}")


def unused_endpoint(endpoint: EndpointSettings, models: Iterable[str], what: str) -> list[str]:
    """A note when endpoint settings were given but no model is an endpoint (``openai:``)."""
    models = sorted(set(models))
    if endpoint == EndpointSettings() or any(
            m.split(":", 1)[0].lower() in REMOTE for m in models):
        return []
    calls = f"its models are {', '.join(models)}" if models else "it calls no model"
    return [f"{what} apply to endpoint (openai:) models only; this run calls none ({calls})"]


@app.command("evaluate")
def evaluate_cmd(
    system: str = typer.Argument(..., help="system name, e.g. multihop_qa, or module:factory"),
    data: str = typer.Option(
        "world", help="world | hotpotqa | musique | pubmedqa | mbpp | amazon | FILE (format "
                      "detected: "
                      "HotpotQA, 2Wiki, MuSiQue, PubMedQA, MBPP, HumanEval, coalign rows)"),
    fields: str = typer.Option(
        None, help="read --data FILE (any JSONL) through this mapping: system input, target "
                   "or id = the row key, e.g. question=q,paragraphs=ctx,target=answer,id=qid"),
    metric: str = typer.Option(None, help="f1 | em | accuracy | module:function (default: the "
                                          "system's)"),
    limit: int = typer.Option(20, min=1, help="number of examples"),
    run_dir: Path = typer.Option(Path("runs/evaluate"), help="run store + LLM cache folder"),
    model: str = typer.Option(None, help="task model (name or spec; default: an exported "
                                         f"system's, else {DEFAULT_MODEL})"),
    config: Path = typer.Option(None, help="system config JSON, e.g. from coalign export "
                                           "(default: unoptimized)"),
    workers: int = typer.Option(2, min=1, help="examples run concurrently"),
    seed: int = typer.Option(0),
    json_out: Path = typer.Option(None, "--json", help="write the summary as JSON"),
    lm: str = typer.Option(None, "--lm", help="replay:DIR answers every LLM call from the "
                           "replay table in DIR (no model is loaded); live calls the system's "
                           "models (default: an exported system's lm, else live)"),
    timeout: float = TIMEOUT,
    retries: int = RETRIES,
    concurrency: int = CONCURRENCY,
    ray: str | None = RAY,
) -> None:
    """Evaluate a system on a dataset; rerunning the same command resumes with no repeated call."""
    endpoint = endpoint_settings(timeout, retries, concurrency)
    if json_out is not None and not json_out.parent.is_dir():  # before the evaluation, not after
        raise ConfigError(f"--json {json_out}: folder {json_out.parent} does not exist; create "
                          "it or write elsewhere")
    export, notes = exported(config), []
    if export is not None and export.get("system") not in (None, system):
        notes.append(f"config file {config} was exported from system {export['system']!r}; "
                     f"evaluating it as {system!r}")
    lm = chosen_lm(lm, export, config, notes)
    if lm is not None:
        if metric is not None:
            raise ConfigError(f"--metric is not used with lm {lm} (the table's rewards are its "
                              "system's metric)")
        refuse_on_replay(lm, {"--model": model, "--ray": ray, "--timeout": timeout,
                              "--retries": retries, "--concurrency": concurrency})
        task = table_task(system, lm)
    else:
        models = export.get("models") if export else None  # a run's model choice per component
        task = load_task(system, chosen_model(model, export, config, notes), metric, models)
        notes += unused_endpoint(endpoint, models_of(task),
                                 "--timeout, --retries and --concurrency")
    result = run_evaluation(task, data_source(data, fields, task), limit, run_dir, workers,
                            seed, config, lm, endpoint, system=system, metric=metric, ray=ray,
                            notes=notes)
    print_result(f"{system} on {data}", task, result)
    if json_out is not None:
        scores = {t.example_id: t.reward for t in result.traces}  # per example: paired checks
        write_text_file(json_out, json.dumps({**result.summary(), "scores": scores}, indent=2),
                        "--json")
