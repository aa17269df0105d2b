"""Systems and metrics named by import path (``pkg.module:attribute``), checked before a run.

A run config's ``system:`` and ``metric:`` (and ``coalign evaluate SYSTEM --metric``) take a
built-in name or a path into the user's own code. Modules are imported with the current
directory on ``sys.path`` (as ``uvicorn app:app`` does): run coalign from the folder that holds
the module, or install it. Every failure is one ``ConfigError`` line: a malformed path, a module
that is missing or fails to import, a missing attribute, a wrong signature, a factory that
returns no ``Task``, a metric that returns no number.
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
import os
import sys
from collections.abc import Sequence
from typing import Any

from coalign.data import Example, get_metric
from coalign.errors import ConfigError
from coalign.system import System
from coalign.systems import MODEL_CHOICE, SYSTEMS
from coalign.task import Metric, Task

__all__ = ["check_metric", "is_import_path", "load_metric", "load_task", "resolve"]

SYSTEM_SHAPE = "factory(model) -> coalign.task.Task"
METRIC_SHAPE = "metric(prediction, example) -> float"


def is_import_path(name: str) -> bool:
    """Built-in system and metric names have no colon; import paths do."""
    return ":" in name


def resolve(spec: str, what: str) -> Any:
    """The object ``spec`` (``module.path:attribute``, the attribute may be dotted) names;
    ``what`` ("system", "metric") starts each error message."""
    module_name, _, attr = spec.partition(":")
    if not all(p.isidentifier() for p in (*module_name.split("."), *attr.split("."))):
        raise ConfigError(f"{what} {spec!r}: expected an import path module.name:attribute, "
                          "e.g. my_pipeline:build")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:  # the console script lacks it; python -m not
        sys.path.insert(0, cwd)
    importlib.invalidate_caches()  # a module written since the last import must be found
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            raise ConfigError(f"{what} {spec!r}: no module named {exc.name!r} in {cwd} or on "
                              "sys.path; run coalign from its folder or install it") from None
        raise ConfigError(f"{what} {spec!r}: importing {module_name} failed: "
                          f"{_one_line(exc)}") from None
    except Exception as exc:  # the user's module raised while importing
        raise ConfigError(f"{what} {spec!r}: importing {module_name} failed: "
                          f"{_one_line(exc)}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{what} {spec!r}: module {module_name} has no attribute "
                              f"{attr!r}")
        obj = getattr(obj, part)
    return obj


def load_metric(spec: str) -> tuple[Metric, str]:
    """A built-in metric name (``f1``, ``em``, ``accuracy``) or ``module:function``, with the
    name reports show for it."""
    if not is_import_path(spec):
        return get_metric(spec), spec
    metric = resolve(spec, "metric")
    _check_signature(metric, 2, "metric", spec, METRIC_SHAPE)
    return metric, spec.rpartition(":")[2].rpartition(".")[2]


def load_task(system: str, model: str, metric: str | None = None,
              models: Sequence[str] | None = None) -> Task:
    """The task of a built-in system name (``coalign.systems.SYSTEMS``) or of a factory
    ``module:function`` called with ``model``; ``metric`` replaces the task's own metric. A
    factory may return a bare ``System`` when ``metric`` is given. ``models``: each LLM
    component of a built-in system chooses among these (``coalign.systems.MODEL_CHOICE``)."""
    if models and system not in MODEL_CHOICE:
        raise ConfigError(f"field 'models': system {system!r} has no model choice; systems "
                          f"with one: {sorted(MODEL_CHOICE)} (a factory of yours declares "
                          "its own Choice params)")
    if not is_import_path(system):
        if system not in SYSTEMS:
            raise ConfigError(f"unknown system {system!r}; available: {sorted(SYSTEMS)}, or "
                              "an import path module:factory")
        made: Any = SYSTEMS[system](model, **({"models": tuple(models)} if models else {}))
    else:
        factory = resolve(system, "system")
        _check_signature(factory, 1, "system", system, SYSTEM_SHAPE)
        try:
            made = factory(model)
        except Exception as exc:  # the user's factory: its failure named in one line
            raise ConfigError(f"system {system!r}: calling it with model {model!r} failed: "
                              f"{_one_line(exc)}") from None
    scored = load_metric(metric) if metric is not None else None
    if isinstance(made, System) and scored is not None:
        return Task(made, *scored)
    if not isinstance(made, Task):
        bare = " (a System needs a metric: give the run config one)" \
            if isinstance(made, System) else ""
        raise ConfigError(f"system {system!r} returned a {type(made).__name__}, expected "
                          f"a coalign.task.Task{bare}; write it as {SYSTEM_SHAPE}")
    return made if scored is None else Task(made.system, *scored)


def check_metric(task: Task, example: Example, system: str, metric: str | None) -> None:
    """Score one prediction with the task's metric when it is the user's code (``metric``, or
    the metric of a factory ``system``), before anything runs: it must return a finite number.

    The probe predictions are ``example``'s own target (a perfect answer), then ``""`` (an
    empty one) when the metric raises on the target; the first that returns decides. A metric
    that raises on both is refused: it would fail on the system's outputs as well.
    """
    spec = metric if metric is not None else system
    if not is_import_path(spec):
        return
    errors = []
    for prediction in (example.target, ""):
        try:
            value = task.metric(prediction, example)
        except Exception as exc:  # the user's metric: its failure reported, not raised
            errors.append(exc)
            continue
        if isinstance(value, numbers.Real) and math.isfinite(value):
            return
        raise ConfigError(f"metric {spec!r} returned {value!r} ({type(value).__name__}) for "
                          f"example {example.id!r}; write it as {METRIC_SHAPE} returning a "
                          "finite number")
    raise ConfigError(f"metric {spec!r} failed on example {example.id!r} with its own target "
                      f"and with an empty prediction: {_one_line(errors[0])}")


def _check_signature(fn: Any, n_args: int, what: str, spec: str, shape: str) -> None:
    if not callable(fn):
        raise ConfigError(f"{what} {spec!r} is a {type(fn).__name__}, not a function; "
                          f"expected {shape}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins have none: the call will tell
        return
    try:
        signature.bind(*range(n_args))
    except TypeError:
        raise ConfigError(f"{what} {spec!r} takes {signature}; expected {shape}") from None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
