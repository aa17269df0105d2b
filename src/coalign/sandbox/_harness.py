"""Child side, worker: run the code once, then each test the supervisor names, and report.

Sent to the child compiled with ``_jail`` and ``_supervisor`` (see ``_isolate.program``): it
imports nothing from coalign, only cheap built-in modules, and has no ``from __future__`` line.
The worker is a fork of the supervisor (``_supervisor.py``) and runs the untrusted code in its
own process. It never holds the parent's result descriptor: it reads test indices on one private
pipe and answers on another, one line per event (see ``_send``). The supervisor trusts none of it
beyond "the worker says test i had this outcome": crashes, limits and kills it decides itself.
"""

import builtins
import os
import resource
import signal
import sys


class _Timeout(BaseException):
    """Raised by the per-test timers; a BaseException so that ``except Exception`` lets it pass."""


_armed = False


def _on_alarm(signum, frame):
    if _armed:
        raise _Timeout


# Bound before any untrusted code runs: code that patches ``os`` changes none of these.
_exit, _write, _read, _getpid = os._exit, os.write, os.read, os.getpid
_worker_pid = 0


def _send(fd, *fields):
    """One line of space-separated fields, each UTF-8 as hex: the supervisor parses it without
    ``ast`` (whose import would cost every run a few milliseconds)."""
    if _getpid() != _worker_pid:  # a process forked by the code under test never reports
        _exit(0)
    data = " ".join(f.encode("utf-8", "backslashreplace").hex() for f in fields).encode() + b"\n"
    while data:
        data = data[_write(fd, data):]


_MEMORY_LINE = b"memory".hex().encode() + b"\n"  # built now: no memory may be left to build it


def _commands(fd):
    """Test indices from the supervisor, one per line, until it closes the pipe."""
    buffer = b""
    while True:
        while b"\n" not in buffer:
            chunk = _read(fd, 64)
            if not chunk:
                return
            buffer += chunk
        line, buffer = buffer.split(b"\n", 1)
        yield int(line)


def _set_limits(limits, cpu):
    """Rlimits of one worker; ``cpu``: whole seconds left of the run's CPU budget."""
    mb = 1024 * 1024
    for name, soft, hard in (
        ("RLIMIT_CORE", 0, 0),
        ("RLIMIT_CPU", cpu, cpu + 1),  # SIGXCPU at the soft limit, SIGKILL one second later
        ("RLIMIT_FSIZE", limits["file_mb"] * mb, None),
        ("RLIMIT_NPROC", limits["procs"] + 1, None),  # the supervisor is not the code's budget
        ("RLIMIT_NOFILE", 64, None),
        ("RLIMIT_AS", limits["memory_mb"] * mb, None),
    ):
        resource.setrlimit(getattr(resource, name), (soft, soft if hard is None else hard))


def _describe(exc, chars):
    try:
        text = str(exc)
    except BaseException:
        text = "<unprintable>"
    return type(exc).__name__, text[:chars]


# The per-test limit counts CPU time (SIGPROF), so a busy loop ends after the same work however
# loaded the machine is, and the feedback an LLM sees for it does not depend on the load. Code
# that blocks (sleep, a read) burns no CPU: a wall-clock alarm at twice the limit ends it.
_TIMERS = ((signal.ITIMER_PROF, signal.SIGPROF, 1), (signal.ITIMER_REAL, signal.SIGALRM, 2))


def _attempt(fn, seconds, chars):
    """Run ``fn`` under the per-test timers; ``(None, "", value)`` or ``(error, message, None)``."""
    global _armed
    for _, signum, _ in _TIMERS:
        signal.signal(signum, _on_alarm)  # the code under test may have replaced it
    try:
        _armed = True
        if seconds:
            for timer, _, factor in _TIMERS:
                signal.setitimer(timer, seconds * factor)
        try:
            value = fn()
        finally:
            _armed = False
            for timer, _, _ in _TIMERS:
                signal.setitimer(timer, 0)
        return None, "", value
    except _Timeout:
        return "Timeout", f"took longer than {seconds}s", None
    except BaseException as exc:
        return *_describe(exc, chars), None


def _explain(test, ns, seconds, chars):
    """For a bare ``assert lhs == rhs``, show what the left side evaluated to."""
    import ast

    try:
        body = ast.parse(test).body
    except BaseException:
        return ""
    if len(body) != 1 or not isinstance(body[0], ast.Assert) or body[0].msg is not None:
        return ""
    check = body[0].test
    if not isinstance(check, ast.Compare) or [type(op) for op in check.ops] != [ast.Eq]:
        return ""
    left = ast.get_source_segment(test, check.left) or "left side"
    code = compile(ast.Expression(check.left), "<test>", "eval")
    error, _, value = _attempt(lambda: repr(eval(code, ns)), seconds, chars)
    return "" if error else f"{left} is {value}"[:chars]


def work(job, programs, cpu, to_supervisor, from_supervisor):
    """The worker's life: load the code, run the tests it is sent, exit. Never returns."""
    global _worker_pid
    _worker_pid = _getpid()
    try:
        _set_limits(job["limits"], cpu)
        chars, seconds = job["message_chars"], job["limits"]["test_seconds"]
        ns = {"__name__": "solution", "__builtins__": builtins}
        load_error, load_message, _ = _attempt(lambda: [exec(p, ns) for p in programs],
                                               seconds, chars)
        _send(to_supervisor, "loaded")
        for i in _commands(from_supervisor):
            test = job["tests"][i]
            if load_error:
                error, message = load_error, f"while running the code: {load_message}"[:chars]
            else:
                try:
                    program = compile(test, "<test>", "exec")
                except BaseException as exc:
                    error, message = _describe(exc, chars)
                else:
                    error, message, _ = _attempt(lambda p=program: exec(p, ns), seconds, chars)
                    if error == "AssertionError" and not message:
                        message = _explain(test, ns, seconds, chars)
            _send(to_supervisor, "test", str(i), "pass" if error is None else "fail",
                  error or "", message)
        sys.stdout.flush()
        sys.stderr.flush()
    except MemoryError:
        if _getpid() == _worker_pid:
            _write(to_supervisor, _MEMORY_LINE)
        _exit(3)
    # Skip interpreter shutdown: atexit hooks and non-daemon threads of the code under test.
    _exit(0)
