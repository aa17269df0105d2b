"""``coalign arco show``: one agent episode with each step's generated criteria and scores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from coalign.cli._app import app, fail
from coalign.errors import CoalignError

arco_app = typer.Typer(help="ARCO step-level rubric rewards (see docs/arco.md).",
                       no_args_is_help=True)
app.add_typer(arco_app, name="arco")


@arco_app.command("show")
def show(
    checkpoint: Annotated[Path, typer.Argument(
        help="directory written by python -m benchmarks.arco --save-checkpoint")],
    index: Annotated[int, typer.Option("--index", "-i", help="which held-out world question")] = 0,
    width: Annotated[int, typer.Option(help="characters of each observation to print")] = 60,
) -> None:
    """Play the trained policy on a held-out question; print criteria and scores per step."""
    # Heavy imports stay here so `coalign --help` stays fast.
    import torch

    from coalign.data import make_world, split
    from coalign.rubric import Policy, RubricModel, SearchEnv, load_checkpoint

    try:
        model, encoder, spec, extra = load_checkpoint(checkpoint)
    except CoalignError as exc:
        fail(str(exc))
    if not {"world_seed", "world_questions", "train"} <= set(extra):
        fail(f"checkpoint {checkpoint}: meta.json lacks the world it was trained on; "
             "re-create it with python -m benchmarks.arco --save-checkpoint")
    world = make_world(seed=extra["world_seed"], n_questions=extra["world_questions"],
                       n_paragraphs=8)
    _, heldout = split(world, [extra["train"], -1], seed=extra["world_seed"])
    if not 0 <= index < len(heldout):
        fail(f"--index: {index} is out of range; use 0..{len(heldout) - 1}")
    torch.set_num_threads(1)
    env = SearchEnv()
    example = heldout[index]
    traj = Policy(model, encoder, env).rollout([example], greedy=True)[0][0]
    notes = RubricModel(model, encoder, spec).annotate([traj])[0]
    console = Console()
    # model and data text goes out as Text: brackets in it are never read as markup
    console.print(Text.assemble(("Q:", "bold"), f" {traj.question}"))
    console.print(Text(f"gold: {example.target}   (K={spec.k}, criteria={spec.mode}, "
                       f"prefix={'yes' if spec.use_prefix else 'no'})"))
    table = Table(show_lines=True)
    for col in ("t", "action", "result", "criteria", "score", "s_t"):
        table.add_column(col)
    for step, note in zip(traj.steps, notes, strict=True):
        obs = step.observation[:width] + ("…" if len(step.observation) > width else "")
        crits = "\n".join(f"{j + 1}. {c}" for j, c in enumerate(note.criteria)) or "(none)"
        dims = "\n".join(f"{d:+.2f}" for d in note.dims)
        table.add_row(str(step.position + 1), Text(step.action.render()), Text(obs),
                      Text(crits), dims,
                      f"{note.score:+.2f}")
    console.print(table)
    total = sum(n.score for n in notes)
    console.print(f"R = {traj.reward:.0f}   sum_t s_t = {total:+.2f}")
