"""The ``coalign`` command line. Each command lives in its own module and registers on ``app``."""

from __future__ import annotations

# Importing a command module registers its command(s) on ``app``.
from coalign.cli import (  # noqa: E402,F401
    _arco,
    _audit,
    _core,
    _dspy,
    _export,
    _optimize,
    _report,
    _search,
    _table,
)
from coalign.cli._app import app, main

__all__ = ["app", "main"]
