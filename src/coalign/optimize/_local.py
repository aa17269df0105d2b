"""The local optimizer of each param kind, chosen by name: ``LoopSettings.optimizers`` (a run
config's ``optimizers: {text: pareto, weights: ppo}``) over each kind's default in the registry
(``_kinds``). ``text_optimizer`` and ``weights_optimizer``, the settings this superseded, still
choose for their kind. Every registered kind always gets one: a run that can draw a param must
be able to propose for it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from coalign.errors import ConfigError
from coalign.optimize._base import BaseLocalOptimizer
from coalign.optimize._kinds import optimizer_problem
from coalign.optimize._settings import LoopSettings

# superseded settings -> the kind each one chooses for
LEGACY = {"text_optimizer": "text", "weights_optimizer": "weights"}


def _defaults() -> dict[str, str]:
    return {f.name: f.default for f in dataclasses.fields(LoopSettings) if f.name in LEGACY}


def legacy_choices(legacy: Mapping[str, str]) -> dict[str, str]:
    """Param kind -> optimizer name for each superseded setting given (not at its default)."""
    defaults = _defaults()
    return {kind: legacy[field] for field, kind in LEGACY.items()
            if legacy.get(field, defaults[field]) != defaults[field]}


def legacy_conflict(legacy: Mapping[str, str], chosen: Mapping[str, str]) -> str | None:
    """Why a superseded setting and ``chosen`` name different optimizers; None if they don't."""
    for kind, name in legacy_choices(legacy).items():
        if chosen.get(kind, name) != name:
            field = next(f for f, k in LEGACY.items() if k == kind)
            return (f"{kind}: {chosen[kind]!r} disagrees with {field} {name!r}; set only "
                    f"optimizers.{kind} ({field} is superseded)")
    return None


def optimizer_names(s: LoopSettings) -> dict[str, str]:
    """Param kind -> the name of its optimizer under ``s``."""
    legacy = {field: getattr(s, field) for field in LEGACY}
    old = legacy_choices(legacy)
    for field, kind in LEGACY.items():
        options = s.kinds[kind].optimizers if kind in s.kinds else {}
        if kind in old and old[kind] not in options:
            raise ConfigError(f"loop setting {field}: unknown {old[kind]!r}; use one of "
                              f"{sorted(options)}")
    problem = optimizer_problem(s.kinds, s.optimizers) or legacy_conflict(legacy, s.optimizers)
    if problem:
        raise ConfigError(f"loop setting optimizers: {problem}")
    return {kind: s.optimizers.get(kind, old.get(kind, entry.default))
            for kind, entry in s.kinds.items()}


def local_optimizers(s: LoopSettings) -> dict[str, BaseLocalOptimizer]:
    """Param kind -> its local optimizer under ``s``."""
    return {kind: s.kinds[kind].optimizers[name](s)
            for kind, name in optimizer_names(s).items()}
