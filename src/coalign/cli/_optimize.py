"""``coalign optimize CONFIG``, ``coalign resume RUN_DIR`` and the loop-based ``coalign demo``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from coalign.cli._app import app

if TYPE_CHECKING:  # the job pulls in torch: import it only when a command runs
    from coalign.job import Job, RunConfig
    from coalign.optimize import StepRecord

console = Console()

# Sized for under 10 minutes on 2 idle cores (measured: 7.9 min). It tunes the prompts of the
# extractor (which often stops after the first hop of a question) and the answer writer; the
# rewriter and retriever still run, unchanged. The gate needs bootstrap confidence: with 10
# validation questions a strict gate accepted a +2-question change that lost 2.5 on test.
# (text_alternatives: 2 gave 4 decisive stage-1 pairs instead of 2 but took the demo to ~16 min;
# 8 train / 10 val with the 0.5B proposer took 11.3 min, and its instructions were off-task.)
DEMO = {"system": "multihop_qa", "data": "world",
        "split": {"train": 8, "val": 8, "test": 16, "seed": 0},
        "budget": {"iterations": 3, "search_size": 2, "fresh_inputs": 3, "rollout_n": 2,
                   "text_candidates": 3, "text_steps": 1},
        "components": ["info_extractor", "answer_generator"], "gate": "bootstrap"}


def _show_step(rec: StepRecord) -> None:
    mark = "[green]accept[/green]" if rec.accepted else "[dim]reject[/dim]"
    after = f"{rec.val_after:.3f}" if rec.val_after is not None else "  -  "
    value = str(rec.value)
    value = value if len(value) <= 60 else value[:57] + "..."
    console.print(f"step {rec.step:>2} {mark} {rec.component}.{rec.param} "
                  f"val {rec.val_before:.3f} -> {after} ({rec.seconds:.0f} s) {value}")


def run_job(cfg: RunConfig, run_dir: Path) -> None:
    from coalign.job import Job

    job = Job.open(cfg, run_dir)
    opt = job.optimizer
    console.print(f"[bold]{cfg.system}[/bold] on {cfg.data}: train {len(job.train)}, val "
                  f"{len(job.val)}, test {len(job.test)}; {cfg.budget.iterations} iterations; "
                  f"run dir {run_dir}")
    with console.status("stage 1: collecting preference pairs and training local rewards"):
        opt.prepare()
    for rec in opt.history_so_far():
        _show_step(rec)
    opt.run(on_step=_show_step)
    with console.status("evaluating on the test split"):
        before, after = job.evaluate_test()
    summary(job, before.mean_reward, after.mean_reward)


def summary(job: Job, before: float, after: float) -> None:
    opt = job.optimizer
    table = Table(title=f"{job.cfg.system}: test {job.task.metric_name} ({len(job.test)} examples)")
    table.add_column("unoptimized", justify="right")
    table.add_column("optimized", justify="right")
    table.add_column("accepted steps", justify="right")
    accepted = sum(st == "accepted" for _, st, _ in job.store.steps())
    table.add_row(f"{before:.4f}", f"{after:.4f}", str(accepted))
    console.print(table)
    ledger = Table(title="cost ledger (equivalent full-system runs)")
    for col in ("phase", "equiv. runs", "LLM calls"):
        ledger.add_column(col, justify="right" if col != "phase" else "left")
    led = opt.ledger()
    for phase, runs, calls in led.rows():
        ledger.add_row(phase, f"{runs:.2f}", str(calls))
    ledger.add_row("[bold]total[/bold]", f"{led.total_runs:.2f}",
                   str(sum(led.llm_calls.values())))
    console.print(ledger)
    alignment = job.store.get_meta("lrf_alignment") or {}
    if alignment:
        al = Table(title="local reward alignment (stage-1 pairs, cross-validated by input)")
        for col in ("component", "pairs", "pairwise accuracy"):
            al.add_column(col)
        for comp, a in alignment.items():
            al.add_row(comp, str(a["pairs"]), f"{a['accuracy']:.3f}")
        console.print(al)
    console.print("final configuration: " + ", ".join(
        f"{c}.{p}={_shown(v)}" for c, params in opt.config.items() for p, v in params.items()
        if c in {t[0] for t in opt.targets}) + "".join(
        f", {c}.{p}=chosen per input by the LRF" for c, p in sorted(opt.policies)))


def _shown(value: object) -> str:
    """A param value for the summary: a prompt's instruction and how many demos it carries."""
    if not hasattr(value, "instruction"):
        return str(value)
    demos = len(getattr(value, "demos", ()))
    return repr(value.instruction) + (f" + {demos} demos" if demos else "")


@app.command("optimize")
def optimize_cmd(config: Path = typer.Argument(..., help="run config (YAML or JSON)"),
                 run_dir: Path = typer.Option(Path("runs/optimize"))) -> None:
    """Optimize a system as the config says; kill it any time and `coalign resume RUN_DIR`."""
    from coalign.job import load_run_config

    run_job(load_run_config(config), run_dir)


@app.command("resume")
def resume_cmd(
    run_dir: Path = typer.Argument(..., help="run directory of coalign optimize"),
) -> None:
    """Continue a killed optimization: no accepted step lost, no LLM call repeated."""
    from coalign.job import resume_config

    run_job(resume_config(run_dir), run_dir)


@app.command("demo")
def demo_cmd(run_dir: Path = typer.Option(Path("runs/demo"))) -> None:
    """Optimize multihop_qa on the generated world with a small budget (local LLM)."""
    from coalign.job import parse_run_config

    run_job(parse_run_config(DEMO, "demo config"), run_dir)
