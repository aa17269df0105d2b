"""Parent side: turn the child's event lines and exit status into a ``SandboxResult``."""

from __future__ import annotations

import ast
import signal

from coalign.sandbox._limits import Limits
from coalign.sandbox._pump import Capture
from coalign.sandbox._result import (
    MESSAGE_CHARS,
    Isolation,
    SandboxResult,
    Status,
    TestOutcome,
    clip,
)

# The error of the test that was running when the run ended early; later tests are "NotRun".
_RUNNING_ERROR = {"timeout": "Timeout", "memory": "MemoryError", "crashed": "Crashed"}


def events(capture: Capture) -> dict:
    """The child's events by kind, the last of each winning; ``tests`` maps index to event.

    Anything malformed is skipped: the code under test can write to the events pipe too.
    """
    found: dict = {"tests": {}, "started": set()}
    for line in bytes(capture.data).splitlines():
        try:
            event = ast.literal_eval(line.decode("utf-8", "replace"))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        if not isinstance(event, dict) or not isinstance(event.get("k"), str):
            continue
        if event["k"] in ("test", "start"):
            if isinstance(event.get("i"), int):
                if event["k"] == "test":
                    found["tests"][event["i"]] = event
                else:
                    found["started"].add(event["i"])
        else:
            found[event["k"]] = event
    return found


def child_pid(found: dict) -> int | None:
    """The jailed child's pid as the jail's supervisor reported it (namespaces only)."""
    pid = found.get("pid", {}).get("pid")
    return pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 1 else None


def verdict(tests: list[str], found: dict, limits: Limits, isolation: Isolation,
            output: tuple[str, str], finished: bool, exit_code: int, cpu: float,
            seconds: float) -> SandboxResult:
    ended = found.get("exit")
    if isinstance(ended, dict):  # the jail's supervisor saw the child itself end
        exit_code = _number(ended.get("code"), exit_code)
        cpu = _number(ended.get("cpu"), cpu)
    status, detail = _status(found, limits, finished, int(exit_code), cpu)
    outcomes = []
    for i, test in enumerate(tests):
        event = found["tests"].get(i)
        if event is not None:
            outcomes.append(_outcome(test, event))
        elif i in found["started"] and status in _RUNNING_ERROR:  # running when the run ended
            outcomes.append(TestOutcome(test, False, _RUNNING_ERROR[status], detail))
        else:
            outcomes.append(TestOutcome(test, False, "NotRun", detail or "not reached"))
    return SandboxResult(tuple(outcomes), status, output[0], output[1], round(seconds, 3),
                         isolation, detail)


def _number(value: object, default: float) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return value if ok else default  # type: ignore[return-value]


def _status(found: dict, limits: Limits, finished: bool, exit_code: int,
            cpu: float) -> tuple[Status, str]:
    if not finished:
        return "timeout", f"exceeded the wall time limit of {limits.wall_seconds}s"
    if "syntax" in found:
        return "syntax", clip(str(found["syntax"].get("message", "")), MESSAGE_CHARS)
    if "done" in found:  # the supervisor's verdict: the first way a worker died, if one did
        status = found["done"].get("status")
        if status not in ("ok", "timeout", "memory", "crashed"):
            status = "crashed"
        return status, clip(str(found["done"].get("detail", "")), MESSAGE_CHARS)
    if "jailfail" in found:
        message = clip(str(found["jailfail"].get("message", "")), MESSAGE_CHARS)
        return "crashed", f"could not enter the sandbox: {message}"
    if exit_code == -signal.SIGXCPU or (exit_code == -signal.SIGKILL
                                        and cpu >= limits.cpu_seconds - 0.1):
        return "timeout", f"exceeded the CPU time limit of {limits.cpu_seconds}s"
    if exit_code == -signal.SIGKILL:
        return "memory", "killed, most likely for using too much memory"
    if exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = f"signal {-exit_code}"
        return "crashed", f"killed by {name}"
    return "crashed", f"exited with code {exit_code} before the tests finished"


def _outcome(test: str, event: dict) -> TestOutcome:
    if event.get("passed") is True:
        return TestOutcome(test, True)
    return TestOutcome(test, False, clip(str(event.get("error") or "Failed"), 80),
                       clip(str(event.get("message") or ""), MESSAGE_CHARS))


def text(capture: Capture) -> str:
    """Captured output as text, saying how much was clipped."""
    out = bytes(capture.data).decode("utf-8", "replace")
    if capture.total > len(capture.data):
        out += f"\n... [{capture.total - len(capture.data)} more bytes clipped]"
    return out
