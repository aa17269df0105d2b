"""User-facing errors: each message is one line naming the culprit and, where possible, the fix.

The CLI turns any ``CoalignError`` into ``error: <message>`` on stderr and exit code 2.
"""

from __future__ import annotations


class CoalignError(Exception):
    """Base class of every error a user can cause and fix."""


class ConfigError(CoalignError, ValueError):
    """A system, parameter or run configuration is invalid."""


class GraphError(ConfigError):
    """The component graph is invalid (cycle, missing field, duplicate name, unknown param)."""


class DataError(CoalignError, ValueError):
    """A dataset file or row is unusable; the message names the file, row and field."""


class StoreError(CoalignError):
    """A run store is missing, corrupt, or belongs to a different configuration."""


class TrackingError(CoalignError):
    """An experiment tracker (MLflow) refused a call or cannot be reached."""


class MissingExtra(CoalignError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""


def need_torch(what: str) -> None:
    """Raise ``MissingExtra`` naming ``what`` unless torch can be imported."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise MissingExtra(f"{what} need torch, which is not installed: pip install "
                           "'coalign[rewards]' (install torch==2.13.0 first for its CPU "
                           "build)") from None
