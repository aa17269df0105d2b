"""Progress bars for ``coalign optimize``: one per long phase, with elapsed time and an ETA.

Stage 1 counts rollout inputs done out of all (inputs x components), validation counts inputs,
and the steps bar carries the equivalent full-system runs spent so far and the best validation
score. Drawn only on a terminal: logs and captured output keep the plain step lines.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class RunProgress:
    """A bar per phase, created when the phase first reports."""

    def __init__(self, console: Console) -> None:
        self._bars = Progress(TextColumn("{task.description}"), BarColumn(),
                              MofNCompleteColumn(), TimeElapsedColumn(),
                              TextColumn("eta"), TimeRemainingColumn(),
                              console=console, disable=not console.is_terminal)
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> RunProgress:
        self._bars.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._bars.stop()

    def phase(self, name: str, done: int, total: int) -> None:
        """``done`` of ``total`` inputs of phase ``name`` are finished."""
        self._update(name, name, done, total)

    def steps(self, done: int, total: int, runs: float, best: float) -> None:
        self._update("steps", f"steps · {runs:,.0f} equiv. runs · best val {best:.3f}",
                     done, total)

    def _update(self, key: str, description: str, done: int, total: int) -> None:
        task = self._tasks.get(key)
        if task is None:
            task = self._tasks[key] = self._bars.add_task(description, total=total)
        self._bars.update(task, description=description, completed=done, total=total)
