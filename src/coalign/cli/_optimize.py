"""``coalign optimize CONFIG``, ``coalign resume RUN_DIR`` and the loop-based ``coalign demo``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand

from coalign.cli._app import app, note
from coalign.cli._core import LIVE, NO_CALLS, parse_lm, refuse_on_replay, unused_endpoint
from coalign.cli._endpoint import CONCURRENCY, RAY, RETRIES, TIMEOUT, endpoint_settings
from coalign.errors import ConfigError
from coalign.executors import ExecutorSpec
from coalign.lm import EndpointSettings

if TYPE_CHECKING:  # the job pulls in torch: import it only when a command runs
    from coalign.job import Job, RunConfig
    from coalign.optimize import StepRecord
    from coalign.runner import EvalResult
    from coalign.tracking import RunTracking

console = Console()
MLFLOW_DEFAULT = "default"  # `--mlflow` alone (coalign.tracking.DEFAULT_URI, not imported here)

# The demo starts the answer writer from a first-draft instruction, as a user would write it: the
# 0.5B model then answers in sentences (test F1 ~0.05). The loop has to find the fix with its own
# machinery: stage-1 pairs (samples plus greedy outputs under 4 edits), the local reward,
# candidates scored by it, and a bootstrap gate on 16 validation questions (on 8, the strict gate
# accepted noise and the bootstrap gate rejected even +0.16). Only the answer writer is tuned:
# its candidates re-run one short call per question, while the extractor's stage-1 pairs were all
# ties at this budget and cost ~3.5 min. Measured on 2 idle cores: 10.1 min, test F1 0.05 ->
# 0.20. The outcome depends on the split: 8/16/16 gave 0.06 -> 0.11, 8/12/16 no accepted step.
# The live demo: code_gen's generator alone on MBPP test problems, free to run on either bundled
# model. The loop's first (global) step validates the 1.5B model, which on these problems holds on
# test with a paired interval above 0 (benchmarks/results/demo/), in a few minutes on 2 cores.
DEMO = {"system": "code_gen_single", "data": "mbpp",
        "models": ["qwen2.5-0.5b", "qwen2.5-1.5b"], "components": ["code_generator.model"],
        "split": {"train": 2, "val": 20, "test": 40, "seed": 0},
        "budget": {"iterations": 1}, "workers": 2}


def _show_step(rec: StepRecord) -> None:
    from coalign.report import reset_note

    value = _shown(rec.value, limit=50) + reset_note(rec.reset)
    if rec.val_after is None:  # nothing validated: say why instead
        shown = f" {value}" if rec.value is not None else ""
        console.print(Text.assemble(f"step {rec.step:>2} ", ("skip  ", "dim"),
                                    f" {rec.component}.{rec.param}: {rec.reason}{shown}"))
        return
    # model text (instructions, demos) is printed as Text, never parsed as markup
    console.print(Text.assemble(
        f"step {rec.step:>2} ", ("accept", "green") if rec.accepted else ("reject", "dim"),
        f" {rec.component}.{rec.param} val {rec.val_before:.3f} -> {rec.val_after:.3f} "
        f"({rec.seconds:.0f} s) {value}"))


def run_job(cfg: RunConfig, run_dir: Path, timeout: float | None = None,
            retries: int | None = None, concurrency: int | None = None,
            ray: str | None = None, *, stored: bool = False, notes: Sequence[str] = (),
            cascade: int = 0) -> None:
    """Run (or go on with) the job of ``cfg`` in ``run_dir``; the options are the command's
    flags (None: not given). ``stored``: ``cfg`` is a run dir's own (``coalign resume``).
    ``cascade``: also fit a cascade of that many fallbacks and evaluate it on test.
    ``notes`` (and this function's own) are printed once the job is open: after the last
    check, so an error stays the only line."""
    from coalign.cli._progress import RunProgress
    from coalign.job import Job
    from coalign.systems import models_of

    notes = list(notes)
    if cfg.lm is not None:
        refuse_on_replay(cfg.lm, {"--ray": ray, "--timeout": timeout, "--retries": retries,
                                  "--concurrency": concurrency})
        cfg = _without_unused_on_replay(cfg, stored, notes)
    cfg = with_ray(cfg, ray)
    if cfg.executor.ray is None and cfg.executor != ExecutorSpec():  # workers, cpus, ...
        notes.append("the run config's executor settings apply to Ray actors only; without "
                     "executor.ray (or --ray) model calls run on threads here, `workers` of "
                     "them")
    endpoint = endpoint_settings(timeout, retries, concurrency, cfg.endpoint)
    job = Job.open(cfg.model_copy(update={"endpoint": endpoint}), run_dir)
    opt = job.optimizer
    if cfg.lm is None:
        notes += unused_endpoint(endpoint, [*models_of(job.task), *filter(None, [cfg.proposer])],
                                 "endpoint settings (--timeout, --retries, --concurrency, "
                                 "endpoint:)")
    for line in notes:
        note(line)
    console.print(Text.assemble(
        (cfg.system, "bold"), f" on {cfg.data}: train {len(job.train)}, val {len(job.val)}, "
        f"test {len(job.test)}; {cfg.budget.iterations} iterations; run dir {run_dir}"))
    if job.data_read != str(cfg.data):  # a file: say which format it was read as
        console.print(Text(f"data: {job.data_read}"))
    for comp, params in cfg.start.items():
        for name, value in params.items():
            console.print(Text(f"starting from {comp}.{name} = {value!r}"))
    with _tracking(job) as tracking:  # a no-op without `tracking:` in the config
        with RunProgress(console) as bars:
            opt.prepare(progress=bars.phase)
            for rec in opt.history_so_far():
                _show_step(rec)

            def on_step(rec: StepRecord) -> None:
                _show_step(rec)
                tracking.on_step(rec)
                bars.steps(rec.step + 1, cfg.budget.iterations, opt.account.equivalent_runs(),
                           opt.val_score)

            opt.run(on_step=on_step, progress=bars.phase)
        with console.status("evaluating on the test split"):
            before, after = job.evaluate_test()
        summary(job, before, after)
        if cascade:
            cascade_summary(job, after, cascade)
        tracking.finish(opt.ledger())


def cascade_summary(job: Job, after: EvalResult, depth: int) -> None:
    """The run's cascade (``coalign.cascade``) on test beside the optimized config; a system
    that cannot be cascaded gets a note, not a failed run."""
    try:
        fit = job.fit_cascade(depth)
    except ConfigError as exc:
        note(f"--cascade: {exc}")
        return
    with console.status("evaluating the cascade on the test split"):
        res = job.cascade_on_test(fit.cascade)
    console.print(Text(
        f"cascade ({len(fit.cascade.configs) - 1} fallback(s) of {fit.candidates - 1} "
        f"validated configs): test {job.task.metric_name} {res.result.mean_reward:.4f} "
        f"against {after.mean_reward:.4f}; {res.escalated:.0%} of test examples ran a "
        f"fallback; model s/query {after.cost_per_query_s:.1f} -> {res.cost_per_query_s:.1f} "
        f"({res.rerun_cost_per_query_s:.1f} rerunning only what a fallback changes); "
        f"export it with `coalign export RUN_DIR --cascade {depth}`"))


def summary(job: Job, before: EvalResult, after: EvalResult) -> None:
    from coalign.stats import paired_bootstrap

    opt = job.optimizer
    table = Table(title=Text(f"{job.cfg.system}: test {job.task.metric_name} "
                             f"({len(job.test)} examples)"))
    for col in ("unoptimized", "optimized", "Δ [95% CI]", "accepted steps", "model s/query"):
        table.add_column(col, justify="right")
    accepted = sum(st == "accepted" for _, st, _ in job.store.steps())
    mean, lo, hi, _ = paired_bootstrap(after.scores, before.scores, seed=job.cfg.seed)
    table.add_row(f"{before.mean_reward:.4f}", f"{after.mean_reward:.4f}",
                  f"{mean:+.4f} [{lo:+.4f}, {hi:+.4f}]", str(accepted),
                  f"{before.cost_per_query_s:.1f} -> {after.cost_per_query_s:.1f}")
    console.print(table)
    console.print("Δ: mean paired difference over test examples, paired bootstrap interval")
    ledger = Table(title="cost ledger (equivalent full-system runs)")
    for col in ("phase", "equiv. runs", "LLM calls", "cache hits"):
        ledger.add_column(col, justify="right" if col != "phase" else "left")
    led = opt.ledger()
    for phase, runs, calls, hits in led.rows():
        ledger.add_row(Text(phase), f"{runs:.2f}", str(calls), str(hits))
    ledger.add_row("[bold]total[/bold]", f"{led.total_runs:.2f}",
                   str(sum(led.llm_calls.values())), str(sum(led.cache_hits.values())))
    console.print(ledger)
    alignment = job.store.get_meta("lrf_alignment") or {}
    if alignment:
        al = Table(title="local reward alignment (stage-1 pairs, cross-validated by input)")
        for col in ("component", "pairs", "pairwise accuracy", "inputs", "per-input accuracy"):
            al.add_column(col)
        for comp, a in alignment.items():  # runs from before per-input figures lack the last two
            per_input = a.get("input_accuracy")
            al.add_row(Text(comp), str(a["pairs"]), f"{a['accuracy']:.3f}",
                       str(a.get("inputs", "—")), "—" if per_input is None else f"{per_input:.3f}")
        console.print(al)
    console.print(Text("final configuration: " + ", ".join(
        f"{c}.{p}={_shown(v)}" for c, params in opt.config.items() for p, v in params.items()
        if (c, p) in opt.targets) + "".join(
        f", {c}.{p}=chosen per input by the LRF" for c, p in sorted(opt.policies))))


def _shown(value: object, limit: int | None = None) -> str:
    """A param value for display: a prompt's instruction and how many demos it carries (the
    value may be a ``TextValue`` or its JSON form from the step ledger)."""
    if isinstance(value, dict) and "instruction" in value:
        instruction, demos = value["instruction"], len(value.get("demos", ()))
    elif hasattr(value, "instruction"):
        instruction, demos = value.instruction, len(getattr(value, "demos", ()))
    else:
        text = str(value)
        return text if limit is None or len(text) <= limit else text[:limit - 3] + "..."
    if limit is not None and len(instruction) > limit:
        instruction = instruction[:limit - 3] + "..."
    return repr(instruction) + (f" + {demos} demos" if demos else "")


class _MlflowFlagCommand(TyperCommand):
    """``--mlflow`` may come without a value (last, or before another option): it then means
    ``--mlflow default``, MLflow's default store. Typer has no optional option values."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        args = list(args)
        for i, arg in enumerate(args):
            if arg == "--":
                break
            if arg == "--mlflow" and (i + 1 == len(args) or args[i + 1].startswith("-")):
                args[i] = f"--mlflow={MLFLOW_DEFAULT}"
        return super().parse_args(ctx, args)


CASCADE = typer.Option(0, "--cascade", min=0, metavar="N",
                       help="after the run, fit a cascade of up to N fallback configs and "
                            "evaluate it on test (docs/cascade.md)")


@app.command("optimize", cls=_MlflowFlagCommand)
def optimize_cmd(config: Path = typer.Argument(..., help="run config (YAML or JSON)"),
                 run_dir: Path = typer.Option(Path("runs/optimize")),
                 lm: str | None = typer.Option(
                     None, "--lm", help="replay:DIR answers every LLM call from the replay "
                     "table in DIR; live calls the system's models; overrides the config's lm"),
                 timeout: float = TIMEOUT, retries: int = RETRIES,
                 concurrency: int = CONCURRENCY,
                 mlflow: str | None = typer.Option(
                     None, help="MLflow tracking URI (sqlite:///mlflow.db, http://host:5000, "
                     "file:DIR); alone (or 'default'): $MLFLOW_TRACKING_URI, else mlflow.db "
                     "in the current folder. Overrides tracking.mlflow of the config"),
                 ray: str | None = RAY, cascade: int = CASCADE) -> None:
    """Optimize a system as the config says; kill it any time and `coalign resume RUN_DIR`."""
    from coalign.job import load_run_config

    notes: list[str] = []
    cfg = with_mlflow(with_lm(load_run_config(config), lm, config, notes), mlflow)
    run_job(cfg, run_dir, timeout, retries, concurrency, ray, notes=notes, cascade=cascade)


@app.command("resume", cls=_MlflowFlagCommand)
def resume_cmd(
    run_dir: Path = typer.Argument(..., help="run directory of coalign optimize"),
    timeout: float = TIMEOUT, retries: int = RETRIES, concurrency: int = CONCURRENCY,
    mlflow: str | None = typer.Option(
        None, help="MLflow tracking URI for the rest of the run, as with `optimize --mlflow` "
        "(default: the one the run was started with, if any); kept for later resumes"),
    ray: str | None = RAY, cascade: int = CASCADE,
) -> None:
    """Continue a killed optimization: no accepted step lost, no LLM call repeated."""
    from coalign.job import resume_config

    run_job(with_mlflow(resume_config(run_dir), mlflow), run_dir, timeout, retries,
            concurrency, ray, stored=True, cascade=cascade)


def with_mlflow(cfg: RunConfig, mlflow: str | None) -> RunConfig:
    """``cfg`` tracking to ``--mlflow`` (if given; ``default`` resolved now, so a later
    `coalign resume` from another folder finds the same store). Tracking is outside the
    config's digest, and the run dir stores it with the run config: resumes keep it."""
    uri = mlflow or cfg.tracking.mlflow
    if uri == MLFLOW_DEFAULT:
        from coalign.tracking import default_tracking_uri

        uri = default_tracking_uri()
    if uri == cfg.tracking.mlflow:
        return cfg
    return cfg.model_copy(update={"tracking": cfg.tracking.model_copy(update={"mlflow": uri})})


def with_lm(cfg: RunConfig, lm: str | None, where: Path, notes: list[str]) -> RunConfig:
    """``cfg`` with ``--lm`` (replay:DIR, or live for none) in place of its ``lm``, a note
    saying so when the config named another."""
    if lm is None:
        return cfg
    value = parse_lm(lm)
    if "lm" in cfg.model_fields_set and cfg.lm != value:
        notes.append(f"--lm {lm} overrides the lm of run config {where} ({cfg.lm or LIVE})")
    return cfg.model_copy(update={"lm": value})


def _without_unused_on_replay(cfg: RunConfig, stored: bool, notes: list[str]) -> RunConfig:
    """``cfg`` (on replay) without the run config fields replay ignores: refused in a config
    the user can edit, dropped with a note in a run dir's stored one."""
    unused = [name for name, given in (
        ("model", "model" in cfg.model_fields_set and not stored),  # a stored one has all
        ("executor.ray", cfg.executor.ray is not None),
        ("endpoint", cfg.endpoint != EndpointSettings())) if given]
    if not unused:
        return cfg
    fields = " and ".join(repr(f) for f in unused)
    why = "the table's space names the models" if unused == ["model"] else NO_CALLS
    if not stored:
        one = len(unused) == 1
        raise ConfigError(f"run config field{'' if one else 's'} {fields} {'is' if one else 'are'}"
                          f" not used with lm {cfg.lm}: {why}; remove {'it' if one else 'them'}")
    notes.append(f"ignoring the run's stored {fields}: not used with lm {cfg.lm} ({why})")
    return cfg.model_copy(update={"executor": cfg.executor.model_copy(update={"ray": None}),
                                  "endpoint": EndpointSettings()})


def with_ray(cfg: RunConfig, address: str | None) -> RunConfig:
    """``cfg`` with its model calls on the Ray cluster at ``address`` (``--ray``), if given."""
    if address is None:
        return cfg
    return cfg.model_copy(update={"executor": cfg.executor.model_copy(update={"ray": address})})


@app.command("demo")
def demo_cmd(run_dir: Path = typer.Option(Path("runs/demo")),
             live: bool = typer.Option(True, help="the loop on the local LLMs (~5 min)"),
             replay: bool = typer.Option(
                 True, help="then coalign against the other optimizers on the committed "
                 "replay tables (no LLM call)")) -> None:
    """Optimize the model choice of a code generator on MBPP (local LLMs, a few minutes), then
    compare optimizers on the replay tables."""
    from coalign.cli._replay_demo import show_replay_comparison
    from coalign.job import parse_run_config

    if live:
        run_job(parse_run_config(DEMO, "demo config"), run_dir)
    if replay:
        show_replay_comparison(console, run_dir / "replay")


def _tracking(job: Job) -> RunTracking:
    """The trackers of ``job.cfg.tracking`` around ``job``'s run store (none: a no-op)."""
    from coalign import __version__
    from coalign.tracking import RunTracking, flat_params, make_trackers

    cfg = job.cfg
    params = flat_params(cfg.redacted().model_dump(mode="json",
                                                   exclude={"endpoint", "tracking"}))
    run_dir = job.store.run_dir
    tags = {"coalign.run_dir": str(Path(run_dir).resolve()), "coalign.system": cfg.system,
            "coalign.config_digest": cfg.digest, "coalign.version": __version__}
    return RunTracking(make_trackers(cfg.tracking), job.store, Path(run_dir).name, params,
                       tags)
