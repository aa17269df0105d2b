"""What a sandboxed run reports: one outcome per test plus how the child process ended."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# "ok": the harness finished; "timeout": the wall or CPU limit was hit; "memory": the child ran out
# of memory; "crashed": it died or exited before reporting; "syntax": the code did not compile.
Status = Literal["ok", "timeout", "memory", "crashed", "syntax"]
Isolation = Literal["namespaces", "rlimits-only"]

MESSAGE_CHARS = 300
_FEEDBACK_CHARS = 2000


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more chars]"


@dataclass(frozen=True)
class TestOutcome:
    __test__ = False  # not a pytest class

    test: str
    passed: bool
    error: str | None = None  # exception type name, or "Timeout" / "NotRun" / "Crashed"
    message: str = ""


@dataclass(frozen=True)
class SandboxResult:
    outcomes: tuple[TestOutcome, ...]
    status: Status
    stdout: str
    stderr: str
    seconds: float
    isolation: Isolation
    detail: str = ""  # why the status is not "ok", in one line

    @property
    def n_passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    @property
    def passed(self) -> bool:
        return bool(self.outcomes) and self.n_passed == len(self.outcomes)

    def feedback(self) -> str:
        """A short report for an LLM: what went wrong and which tests failed, with reasons."""
        lines = [f"{self.n_passed}/{len(self.outcomes)} tests passed."]
        if self.status != "ok":
            lines.append(f"Run status: {self.status} ({self.detail}).")
        for o in self.outcomes:
            if not o.passed:
                reason = o.error or "failed"
                if o.message:
                    reason += f": {o.message}"
                lines.append(f"FAILED {clip(o.test.strip(), 200)} -> {reason}")
        if self.stderr.strip() and self.status != "ok":
            lines.append("stderr (end): " + self.stderr.strip()[-300:])
        return clip("\n".join(lines), _FEEDBACK_CHARS)
