"""Which model runs an LLM component: one fixed name, or a ``Choice`` among configured models.

The ready-made systems take ``models=(...)``: each of their LLM components then gets a ``model``
param over those names, starting from the system's ``model``, so an optimizer can spend a
strong model where it pays and a cheap one elsewhere. ``model_scope="per_instance"`` lets the
choice differ per input (a router), as the reference's context model selector does.
"""

from __future__ import annotations

from collections.abc import Sequence

from coalign.errors import ConfigError
from coalign.params import Choice

SCOPES = ("global", "per_instance")


def model_param(model: str, models: Sequence[str] | None = None,
                scope: str = "global") -> str | Choice:
    """``model`` itself when ``models`` is empty, else a ``Choice`` over ``models`` that starts
    at ``model``.

    Raises:
        ConfigError: ``model`` is not among ``models``, a model repeats, or an unknown scope.
    """
    if not models:
        return model
    models = list(models)
    if scope not in SCOPES:
        raise ConfigError(f"model_scope: must be one of {list(SCOPES)}, got {scope!r}")
    if len(set(models)) != len(models) or not all(isinstance(m, str) and m for m in models):
        raise ConfigError(f"models: expected distinct model names, got {models}")
    if model not in models:
        raise ConfigError(f"models: the starting model {model!r} must be one of {models}")
    return Choice(models, model, scope=scope, description="model running this component")
