"""``coalign optimize-dspy pkg.mod:program --train rows.jsonl --inputs question --metric ...``:
a user's own DSPy program optimized by coalign, saved with ``program.save()``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from coalign.cli._app import app
from coalign.config import read_text_file
from coalign.errors import ConfigError

console = Console()


def read_examples(path: Path, inputs: list[str]) -> list[Any]:
    """One ``dspy.Example`` per JSONL row, with ``inputs`` as its input fields; a bad row is
    one line naming the file, the line and the field."""
    import dspy

    rows = []
    for n, line in enumerate(read_text_file(path, "examples file").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise ConfigError(f"{path} line {n}: not a JSON object") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{path} line {n}: expected a JSON object, got "
                              f"{type(row).__name__}")
        missing = [f for f in inputs if f not in row]
        if missing:
            raise ConfigError(f"{path} line {n}: no field {missing[0]!r} (it has "
                              f"{sorted(row)}); pass the row's input fields with --inputs")
        rows.append(dspy.Example(**row).with_inputs(*inputs))
    if not rows:
        raise ConfigError(f"{path}: no examples")
    return rows


def load_program(spec: str) -> Any:
    """The ``dspy.Module`` that ``module:attribute`` names: the object itself, or what calling
    it (a class or a function taking no argument) returns."""
    import dspy

    from coalign.imports import resolve

    obj = resolve(spec, "program")
    if not isinstance(obj, dspy.Module) and callable(obj):
        try:
            obj = obj()
        except TypeError as exc:
            raise ConfigError(f"program {spec!r}: calling it with no argument failed ({exc})") \
                from None
    if not isinstance(obj, dspy.Module):
        raise ConfigError(f"program {spec!r} is a {type(obj).__name__}, not a dspy.Module (or a "
                          "class or function that builds one)")
    return obj


@app.command("optimize-dspy")
def optimize_dspy_cmd(
    program: str = typer.Argument(..., help="module:attribute naming a dspy.Module, or a class "
                                            "or function building one"),
    train: Path = typer.Option(..., "--train", help="JSONL examples, one object per line"),
    inputs: str = typer.Option(..., "--inputs", help="input fields of each row, comma-separated "
                                                     "(the rest are labels), e.g. question"),
    metric: str = typer.Option(..., "--metric", help="module:function, a DSPy metric "
                                                     "(example, prediction, trace=None)"),
    val: Path | None = typer.Option(None, "--val", help="JSONL validation examples (default: "
                                                        "half of --train)"),
    model: str | None = typer.Option(None, "--model", help="model name or spec (default: "
                                     "the LM the module set with dspy.configure, else "
                                     "qwen2.5-0.5b)"),
    iterations: int = typer.Option(4, "--iterations", min=0),
    budget: str = typer.Option("{}", "--budget", help="other budget fields as a JSON object, "
                                                      "e.g. '{\"rollout_n\": 0}'"),
    max_tokens: int = typer.Option(256, "--max-tokens", min=1),
    seed: int = typer.Option(0, "--seed"),
    run_dir: Path = typer.Option(Path("runs/dspy"), "--run-dir", help="run store and LM cache "
                                                                      "(resumable)"),
    save: Path = typer.Option(Path("program.json"), "--save", help="where program.save() "
                                                                   "writes the result"),
) -> None:
    """Optimize the instructions and demos of a DSPy program's predictors with coalign."""
    from coalign.imports import resolve

    fields = [f.strip() for f in inputs.split(",") if f.strip()]
    if not fields:
        raise ConfigError("--inputs: name at least one input field, e.g. --inputs question")
    if save.suffix not in (".json", ".pkl"):
        raise ConfigError(f"--save {save}: DSPy saves to a .json (or .pkl) file")
    module = load_program(program)
    score = resolve(metric, "metric")
    if not callable(score):
        raise ConfigError(f"metric {metric!r} is a {type(score).__name__}, not a function")
    try:
        extra = json.loads(budget)
    except ValueError:
        raise ConfigError(f"--budget {budget!r}: not a JSON object") from None
    if not isinstance(extra, dict):
        raise ConfigError(f"--budget {budget!r}: expected a JSON object of budget fields")
    from coalign.dspy import budget_spec

    budget_spec({"iterations": iterations, **extra})  # checked before the run dir is made
    trainset = read_examples(train, fields)
    valset = read_examples(val, fields) if val is not None else None

    import dspy

    from coalign.cli._progress import RunProgress
    from coalign.dspy import CoalignLM, optimize

    run_dir.mkdir(parents=True, exist_ok=True)
    # the module's own dspy.LM is used as it is (its provider and DSPy's cache); else a bundled
    # model with coalign's response cache in the run dir
    lm = dspy.settings.lm if model is None and dspy.settings.lm is not None else \
        CoalignLM(model or "qwen2.5-0.5b", cache=run_dir / "lm_cache.sqlite",
                  max_tokens=max_tokens)
    with dspy.context(lm=lm), RunProgress(console) as bars:
        result = optimize(module, trainset, score, valset=valset,
                          budget={"iterations": iterations, **extra},
                          run_dir=run_dir / "store", seed=seed, progress=bars.phase,
                          on_step=lambda r: console.print(Text(
                              f"step {r.step}: {r.component} "
                              f"{'accepted' if r.accepted else 'rejected'} ({r.reason})")))
    save.parent.mkdir(parents=True, exist_ok=True)
    module.save(str(save))
    console.print(Text(f"validation {result.val_before:.4f} -> {result.val_after:.4f}; "
                       f"changed: {', '.join(result.changed) or 'nothing'}; saved {save}"))
