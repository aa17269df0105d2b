"""Child side, supervisor: the only holder of the parent's result pipe; it decides the verdicts.

Sent to the child compiled after ``_jail`` and ``_harness`` (see ``_isolate.program``). With the
jail it is pid 1 of the sandbox's pid namespace: no signal from inside reaches it, and it is not
dumpable, so code inside cannot open its descriptors through /proc or trace it. It forks a
worker (``_harness.work``) that runs the code and then the tests it is sent, one at a time.

A test passes only if the worker answers for exactly the test being waited on. When the worker
dies during test i (a segfault from C recursion, ``os._exit``, the CPU limit), the supervisor
records test i as ``Crashed``, ``Timeout`` or ``MemoryError``, kills whatever the worker left,
and forks a fresh worker, which loads the code again, for the tests after i. Every worker gets
only what is left of the run's CPU budget; the parent enforces the wall limit on the whole.
Events go to the parent one per line as ``repr(dict)``, built here from checked fields only.
"""

import marshal
import os
import resource
import select
import signal
import sys
import time

_MIN_CPU = 0.2  # CPU seconds below which no new worker starts: the rest is "not reached"
_LINE_BYTES = 65536  # longer lines from the worker are dropped, not buffered
_POLL_SECONDS = 0.05  # how often a silent worker is checked for having died
_EXIT_GRACE = 1.0  # a worker that closed its pipe gets this long to exit before it is killed


class _Parent:
    def __init__(self, fd):
        self.fd = fd

    def send(self, event):
        data = (repr(event) + "\n").encode("utf-8", "backslashreplace")
        while data:
            data = data[os.write(self.fd, data):]


class _Worker:
    """One forked worker: its pid, its answer pipe, its command pipe and its CPU allowance."""

    def __init__(self, job, programs, parent_fd, cpu, hooks):
        answers, self.commands = os.pipe(), os.pipe()
        self.cpu, self.buffer, self.memory, self.timed_out = cpu, b"", False, False
        self.pid = os.fork()
        if self.pid == 0:
            try:
                for fd in (parent_fd, answers[0], self.commands[1]):
                    os.close(fd)  # the result pipe above all: only the supervisor writes there
                os.setpgid(0, 0)
                work, set_dumpable = hooks
                set_dumpable(1)  # its own /proc/self stays usable; the supervisor's does not
                work(job, programs, cpu, answers[1], self.commands[0])
            finally:
                os._exit(4)
        os.close(answers[1])
        os.close(self.commands[0])
        self.fd = answers[0]

    def ask(self, i):
        try:
            os.write(self.commands[1], b"%d\n" % i)
        except OSError:  # it closed the pipe or died: await_event sees the rest
            pass

    def await_event(self, kind, i, seconds):
        """The worker's event of ``kind`` (for test ``i``); None once it died or ran out of time."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            line = self._line()
            if line is not None:
                event = _parse(line)
                if event.get("k") == "memory":
                    self.memory = True
                elif event.get("k") == kind and event.get("i") == i:
                    return event
                continue
            timeout = _POLL_SECONDS
            if deadline is not None:
                timeout = min(timeout, deadline - time.monotonic())
                if timeout <= 0:
                    self.timed_out = True
                    return None
            if select.select([self.fd], [], [], timeout)[0]:
                if not self._fill():
                    return None  # end of file: it died, or closed the pipe itself
            elif _exited(self.pid):  # its children may hold the pipe open: no end of file
                return None

    def _line(self):
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if len(line) < _LINE_BYTES:
                return line
        if len(self.buffer) >= _LINE_BYTES:
            self.buffer = b""
        return None

    def _fill(self):
        try:
            chunk = os.read(self.fd, _LINE_BYTES)
        except OSError:
            chunk = b""
        self.buffer += chunk
        return bool(chunk)

    def stop(self, jailed):
        """Reap the worker (killing it if it still runs) and everything it left; how it ended."""
        os.close(self.commands[1])  # a worker done with its tests exits on this
        deadline = time.monotonic() + (0 if self.timed_out else _EXIT_GRACE)
        while not _exited(self.pid) and time.monotonic() < deadline:
            time.sleep(0.002)
        killed = not _exited(self.pid)
        _kill(self.pid, jailed)  # before the reap, while the pid (and so its group) is held
        _, status, usage = os.wait4(self.pid, 0)
        while jailed:  # pid 1 inherits the orphans: reap them all, so none counts against NPROC
            _kill(self.pid, jailed)
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
        os.close(self.fd)
        return killed, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def _kill(pid, jailed):
    try:
        if jailed:
            os.kill(-1, signal.SIGKILL)  # from pid 1: every other process of the namespace
        else:
            os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _exited(pid):
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _parse(line):
    """A worker line as an event dict, or {}: the code under test can write to that pipe too."""
    try:
        fields = [bytes.fromhex(f.decode()).decode("utf-8", "replace") for f in line.split(b" ")]
    except ValueError:
        return {}
    if fields in (["loaded"], ["memory"]):
        return {"k": fields[0]}
    if len(fields) == 5 and fields[0] == "test" and fields[1].isdigit():
        return {"k": "test", "i": int(fields[1]), "passed": fields[2] == "pass",
                "error": fields[3], "message": fields[4]}
    return {}


def _checked(event, i, chars):
    """The parent's test event for test ``i``, from the worker's answer, fields clipped."""
    passed = event["passed"]
    return {"k": "test", "i": i, "passed": passed,
            "error": None if passed else (event["error"] or "Failed")[:80],
            "message": "" if passed else event["message"][:chars]}


def _death(worker, killed, code, cpu, limits):
    """(status, the running test's error, detail) for a worker that ended early."""
    if worker.timed_out:
        return "ok", "Timeout", f"took longer than {limits['test_seconds']}s"
    if killed:
        return "crashed", "Crashed", "stopped answering the harness"
    if worker.memory:
        return "memory", "MemoryError", f"ran out of memory (limit {limits['memory_mb']} MB)"
    if code == -signal.SIGXCPU or (code == -signal.SIGKILL and cpu >= worker.cpu - 0.1):
        return "timeout", "Timeout", f"exceeded the CPU time limit of {limits['cpu_seconds']}s"
    if code == -signal.SIGKILL:
        return "memory", "MemoryError", "killed, most likely for using too much memory"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return "crashed", "Crashed", f"killed by {name}"
    return "crashed", "Crashed", f"exited with code {code}"


def _backstop(seconds):
    """Wall seconds after which a test's worker is killed, for a C call that ignores the timers."""
    return None if not seconds else 2 * seconds + 1


def supervise(job, parent, jailed, hooks):
    limits, tests, chars = job["limits"], job["tests"], job["message_chars"]
    try:
        programs = [compile(job[name], f"<{name}>", "exec") for name in ("setup", "code")]
    except Exception as exc:  # SyntaxError, or ValueError for a null byte, or too deep nesting
        parent.send({"k": "syntax", "message": f"{type(exc).__name__}: {str(exc)[:chars]}"})
        return
    i, first, died, backstop = 0, True, None, _backstop(limits["test_seconds"])
    while first or i < len(tests):
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        left = limits["cpu_seconds"] - used.ru_utime - used.ru_stime
        if not first and left < _MIN_CPU:  # the parent reports the rest as not reached
            died = ("timeout", f"exceeded the CPU time limit of {limits['cpu_seconds']}s")
            break
        first = False
        worker = _Worker(job, programs, parent.fd, max(1, int(-(-left // 1))), hooks)
        loaded = worker.await_event("loaded", None, backstop)
        while loaded is not None and i < len(tests):
            parent.send({"k": "start", "i": i})
            worker.ask(i)
            event = worker.await_event("test", i, backstop)
            if event is None:
                break
            parent.send(_checked(event, i, chars))
            i += 1
        killed, code, cpu = worker.stop(jailed)
        if loaded is not None and i == len(tests) and not worker.timed_out:
            continue  # it finished the tests; how it exits then does not matter
        status, error, detail = _death(worker, killed, code, cpu, limits)
        if status != "ok":
            died = died or (status, detail)
        if loaded is None:  # the code itself died: every test left fails with it, as with errors
            for j in range(i, len(tests)):
                parent.send({"k": "test", "i": j, "passed": False, "error": error,
                             "message": f"while running the code: {detail}"[:chars]})
            break
        parent.send({"k": "test", "i": i, "passed": False, "error": error, "message": detail})
        i += 1
    status, detail = died or ("ok", "")
    parent.send({"k": "done", "status": status, "detail": detail})


def main(enter_jail, work, set_dumpable):
    job = marshal.load(sys.stdin.buffer)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    parent = _Parent(job["fd"])
    jailed = job["jail"] is not None
    if jailed:
        try:
            enter_jail(job["jail"], parent.send)
        except OSError as exc:
            parent.send({"k": "jailfail", "message": str(exc)})
            os._exit(2)
    # Not dumpable: code in a worker, the same uid, cannot open the result pipe through
    # /proc/<pid>/fd or ptrace this process.
    set_dumpable(0)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    supervise(job, parent, jailed, (work, set_dumpable))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
