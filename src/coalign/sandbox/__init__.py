"""Run untrusted Python (LLM-generated code) against its tests, contained. See docs/sandbox.md."""

from coalign.sandbox._isolate import SandboxWarning
from coalign.sandbox._limits import Limits
from coalign.sandbox._result import Isolation, SandboxResult, Status, TestOutcome
from coalign.sandbox._run import run_tests

__all__ = ["Isolation", "Limits", "SandboxResult", "SandboxWarning", "Status", "TestOutcome",
           "run_tests"]
