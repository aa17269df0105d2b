"""Resource limits for one sandboxed run."""

from __future__ import annotations

from dataclasses import dataclass, fields

from coalign.errors import ConfigError


@dataclass(frozen=True)
class Limits:
    """Per-run limits. Memory is address space per process, so a program that forks may use up to
    ``max_processes * memory_mb`` in total; ``max_processes`` counts the sandbox's own processes."""

    cpu_seconds: float = 5.0
    wall_seconds: float = 10.0
    memory_mb: int = 1024
    file_size_mb: int = 8
    max_processes: int = 32
    output_bytes: int = 4096
    # CPU seconds per test (a wall-clock backstop at twice it), checked between bytecodes, so one
    # long C call can overrun it; cpu and wall limits still apply. None turns both off.
    test_seconds: float | None = 3.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name == "test_seconds":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ConfigError(f"sandbox limit {f.name} must be a positive number, "
                                  f"got {value!r}")
