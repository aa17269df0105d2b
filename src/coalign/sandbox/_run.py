"""``run_tests``: run untrusted code and its tests in a fresh, isolated child process."""

from __future__ import annotations

import functools
import marshal
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from coalign.errors import CoalignError, ConfigError
from coalign.sandbox import _isolate
from coalign.sandbox._limits import Limits
from coalign.sandbox._pump import Capture, exited, pump
from coalign.sandbox._result import MESSAGE_CHARS, Isolation, SandboxResult
from coalign.sandbox._verdict import child_pid, events, text, verdict

_EVENT_BYTES = 1 << 20
_EVENT_BYTES_PER_TEST = 2048


def run_tests(code: str, tests: Sequence[str], *, setup: str = "",
              limits: Limits = Limits()) -> SandboxResult:
    """Execute ``setup`` then ``code`` once in a fresh namespace, then each test statement in it.

    Containment, not result integrity, is the guarantee: code written to cheat runs in the same
    process as the harness and could forge its own results.
    """
    if not sys.platform.startswith("linux"):
        raise CoalignError(f"coalign.sandbox runs only on Linux, not {sys.platform}")
    if isinstance(tests, str) or not all(isinstance(t, str) for t in tests):
        raise ConfigError("sandbox tests must be a sequence of Python statements (strings)")
    if not isinstance(code, str) or not isinstance(setup, str):
        raise ConfigError("sandbox code and setup must be strings")
    isolation, reason = _probe()
    if isolation != "namespaces":
        _isolate.warn_unisolated(reason)
    return _execute(code, list(tests), setup, limits, isolation)


@functools.cache
def _probe() -> tuple[Isolation, str]:
    """Whether the namespace jail works here, checked once per process by using it."""
    # Generous limits: a probe that merely ran slow on a loaded machine must not cost isolation.
    limits = Limits(cpu_seconds=60, wall_seconds=60, test_seconds=None)
    result = _execute("", ["assert True"], "", limits, "namespaces")
    if result.passed:
        return "namespaces", ""
    return "rlimits-only", result.detail or result.stderr.strip()[-200:] or result.status


def _execute(code: str, tests: list[str], setup: str, limits: Limits,
             isolation: Isolation) -> SandboxResult:
    start = time.monotonic()
    jail = _isolate.jail_spec(limits) if isolation == "namespaces" else None
    job = {"setup": setup, "code": code, "tests": tests, "jail": jail,
           "message_chars": MESSAGE_CHARS, "limits": _child_limits(limits)}
    captures = (Capture(limits.output_bytes), Capture(limits.output_bytes),
                Capture(max(_EVENT_BYTES, _EVENT_BYTES_PER_TEST * len(tests))))
    workdir = tempfile.mkdtemp(prefix="coalign-sandbox-")
    try:
        env = _isolate.environment("/tmp" if jail else workdir)
        finished, exit_code, cpu = _spawn(job, workdir, env, start + limits.wall_seconds,
                                          captures)
    finally:
        shutil.rmtree(workdir, onerror=_force_remove)
    return verdict(tests, events(captures[2]), limits, isolation,
                   (text(captures[0]), text(captures[1])), finished, exit_code, cpu,
                   time.monotonic() - start)


def _child_limits(limits: Limits) -> dict:
    return {"cpu": math.ceil(limits.cpu_seconds), "cpu_seconds": limits.cpu_seconds,
            "memory_mb": limits.memory_mb,
            "file_mb": limits.file_size_mb, "procs": limits.max_processes,
            "test_seconds": limits.test_seconds}


def _spawn(job: dict, workdir: str, env: dict[str, str], deadline: float,
           captures: tuple[Capture, Capture, Capture]) -> tuple[bool, int, float]:
    """Start the child, feed and drain it until it ends or the deadline; always reap it."""
    read_fd, write_fd = os.pipe()
    try:
        job["fd"] = write_fd
        try:
            proc = subprocess.Popen(
                _isolate.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, pass_fds=(write_fd,), cwd=workdir, env=env,
                start_new_session=True)
        finally:
            os.close(write_fd)
        payload = _isolate.program() + marshal.dumps(job)
        finished = False
        try:
            finished = pump(proc, payload, read_fd, deadline, captures)
        finally:
            exit_code, cpu = _reap(proc, child_pid(events(captures[2])))
    finally:
        os.close(read_fd)
    return finished, exit_code, cpu


def _reap(proc: subprocess.Popen, jailed_pid: int | None) -> tuple[int, float]:
    """Kill whatever is left of the child, reap it, and return its exit code and CPU seconds."""
    if jailed_pid is not None and not exited(proc.pid):
        _kill(lambda: os.kill(jailed_pid, signal.SIGKILL))  # its death empties the pid namespace
    _kill(lambda: os.killpg(proc.pid, signal.SIGKILL))  # before reaping: the group id stays ours
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream:
            stream.close()
    return proc.returncode, usage.ru_utime + usage.ru_stime


def _kill(action) -> None:
    try:
        action()
    except (ProcessLookupError, PermissionError):
        pass


def _force_remove(func, path, exc_info) -> None:
    """The child may leave directories without write permission: allow and retry."""
    try:
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
            shutil.rmtree(path, ignore_errors=True)
        else:
            func(path)
    except OSError:
        pass
