"""Child side: run the code once, then each test, and report events on a private pipe.

Sent to the child compiled (see ``_isolate.program``): it imports nothing from coalign, only
cheap built-in modules, and has no ``from __future__`` line. The job follows the program on
stdin as a ``marshal`` dict (trusted direction); stdin is then replaced by /dev/null. Events go
out one per line as ``repr(dict)`` on the file descriptor ``job["fd"]``, never on stdout, which
belongs to the code under test. The parent reads them with ``ast.literal_eval``, not ``marshal``.
"""

import builtins
import marshal
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


class _Reporter:
    def __init__(self, fd):
        self.fd = fd
        self.pid = os.getpid()

    def send(self, event):
        if os.getpid() != self.pid:  # a process forked by the code under test never reports
            os._exit(0)
        data = (repr(event) + "\n").encode("utf-8", "backslashreplace")
        while data:
            data = data[os.write(self.fd, data):]


def _set_limits(limits):
    mb = 1024 * 1024
    cpu = limits["cpu"]
    for name, soft, hard in (
        ("RLIMIT_CORE", 0, 0),
        ("RLIMIT_CPU", cpu, cpu + 1),  # SIGXCPU at the soft limit, SIGKILL one second later
        ("RLIMIT_FSIZE", limits["file_mb"] * mb, None),
        ("RLIMIT_NPROC", limits["procs"], None),
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


def _run(job, report):
    chars, seconds = job["message_chars"], job["limits"]["test_seconds"]
    try:
        programs = [compile(job[name], f"<{name}>", "exec") for name in ("setup", "code")]
    except Exception as exc:  # SyntaxError, or ValueError for a null byte, or too deep nesting
        error, message = _describe(exc, chars)
        report.send({"k": "syntax", "message": f"{error}: {message}"})
        return
    ns = {"__name__": "solution", "__builtins__": builtins}
    load_error, load_message, _ = _attempt(lambda: [exec(p, ns) for p in programs], seconds, chars)
    report.send({"k": "loaded"})
    for i, test in enumerate(job["tests"]):
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
        report.send({"k": "test", "i": i, "passed": error is None, "error": error,
                     "message": message})


def main(enter_jail):
    job = marshal.load(sys.stdin.buffer)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    report = _Reporter(job["fd"])
    try:
        if job["jail"] is not None:
            try:
                enter_jail(job["jail"], report.send)
            except OSError as exc:
                report.send({"k": "jailfail", "message": str(exc)})
                os._exit(2)
            report.pid = os.getpid()
        _set_limits(job["limits"])
        _run(job, report)
        report.send({"k": "done"})
        sys.stdout.flush()
        sys.stderr.flush()
    except MemoryError:
        if os.getpid() == report.pid:
            os.write(report.fd, b"{'k': 'memory'}\n")
        os._exit(3)
    # Skip interpreter shutdown: atexit hooks and non-daemon threads of the code under test.
    os._exit(0)
