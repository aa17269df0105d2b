"""Parent side: feed the child its job and drain its pipes, keeping a bounded prefix of each.

The code under test may print without end; everything past a pipe's cap is read and dropped, so
the child never blocks on a full pipe and the parent never holds more than the caps.
"""

from __future__ import annotations

import math
import os
import selectors
import subprocess
import time
from dataclasses import dataclass, field

_CHUNK = 65536
# Once the child exits, stragglers still holding its pipes (only without namespaces) get this long.
_GRACE_SECONDS = 0.2


@dataclass
class Capture:
    cap: int
    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]


def exited(pid: int) -> bool:
    """Whether the child has exited, without reaping it (so its pid and group stay reserved)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def pump(proc: subprocess.Popen, payload: bytes, events_fd: int, deadline: float,
         captures: tuple[Capture, Capture, Capture]) -> bool:
    """Drain stdout, stderr and the events pipe into ``captures``; False if the deadline passed."""
    assert proc.stdin and proc.stdout and proc.stderr
    sel = selectors.DefaultSelector()
    os.set_blocking(proc.stdin.fileno(), False)
    sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
    for f, capture in zip((proc.stdout.fileno(), proc.stderr.fileno(), events_fd), captures,
                          strict=True):
        sel.register(f, selectors.EVENT_READ, capture)
    try:
        return _loop(sel, proc, memoryview(payload), deadline)
    finally:
        sel.close()


def _loop(sel: selectors.BaseSelector, proc: subprocess.Popen, payload: memoryview,
          deadline: float) -> bool:
    assert proc.stdin
    stdin_fd = proc.stdin.fileno()
    grace_end = math.inf
    while any(isinstance(key.data, Capture) for key in sel.get_map().values()):
        now = time.monotonic()
        if now >= deadline:
            return False
        if now >= grace_end:
            return True
        ready = sel.select(min(deadline - now, grace_end - now, 0.25))
        if not ready and grace_end == math.inf and exited(proc.pid):
            grace_end = now + _GRACE_SECONDS
        for key, _ in ready:
            if key.fd == stdin_fd:
                payload = _feed(sel, proc, payload)
                continue
            chunk = os.read(key.fd, _CHUNK)
            if chunk:
                key.data.add(chunk)
            else:
                sel.unregister(key.fd)
    return _await_exit(proc.pid, deadline)


def _await_exit(pid: int, deadline: float) -> bool:
    """Its pipes closed as it exited, or it closed them itself and goes on: wait for the exit."""
    delay = 0.0005
    while not exited(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(2 * delay, 0.05)
    return True


def _feed(sel: selectors.BaseSelector, proc: subprocess.Popen, payload: memoryview) -> memoryview:
    assert proc.stdin
    try:
        payload = payload[os.write(proc.stdin.fileno(), payload):]
    except BlockingIOError:
        return payload
    except BrokenPipeError:  # the child died before reading its job; its exit tells why
        payload = payload[:0]
    if not payload:
        sel.unregister(proc.stdin.fileno())
        proc.stdin.close()
    return payload
