"""Parent side: how the sandbox child is started, and what its jail hides.

The child is ``python -S -s -P -B -u -c <boot>``: no site packages, no user site, no script
directory on ``sys.path``, no .pyc writes, unbuffered output (kept up to a kill). The boot line
runs the jail and harness, compiled once here and sent marshalled on stdin before the job: that
saves compiling them in every child. ``-I`` would
also imply ``-E``, which ignores ``PYTHONHASHSEED`` and makes set order vary between runs; the
environment is built from scratch here instead, so ``-E`` would add nothing.
"""

from __future__ import annotations

import functools
import marshal
import os
import pwd
import sys
import warnings
from pathlib import Path

from coalign.sandbox._limits import Limits

_FLAGS = ("-S", "-s", "-P", "-B", "-u")
_BOOT = "import marshal, sys; exec(marshal.load(sys.stdin.buffer))"


class SandboxWarning(RuntimeWarning):
    """The sandbox runs without namespaces: no network, filesystem or process isolation."""


@functools.cache
def program() -> bytes:
    """The child's program, marshalled: the jail and harness sources, then the call to start."""
    here = Path(__file__).parent
    parts = [(here / name).read_text(encoding="utf-8") for name in ("_jail.py", "_harness.py")]
    source = "\n".join([*parts, "main(enter_jail)\n"])
    return marshal.dumps(compile(source, "<coalign.sandbox>", "exec"))


def command() -> list[str]:
    return [sys.executable, *_FLAGS, "-c", _BOOT]


def environment(home: str) -> dict[str, str]:
    """Nothing inherited (no API keys); ``home`` is the child's working directory."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home,
            "PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8", "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8"}


def jail_spec(limits: Limits) -> dict:
    """What ``_jail.enter_jail`` needs: homes to cover, paths to keep, private /tmp size."""
    homes = _homes()
    return {"homes": homes, "keep": _kept(homes), "tmp_mb": max(16, 4 * limits.file_size_mb)}


@functools.cache
def _homes() -> list[str]:
    """The parent's home directories (``$HOME`` and the password entry's), as real paths.

    A home under /tmp is skipped: the jail's private /tmp already covers it.
    """
    found = [str(Path.home())]
    try:
        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    homes = []
    for home in dict.fromkeys(os.path.realpath(h) for h in found):
        if os.path.isdir(home) and home != "/" and not _within(home, "/tmp"):
            homes.append(home)
    return homes


def _kept(homes: list[str]) -> list[str]:
    """The child's Python installation, where it lives under a covered home (as with pyenv)."""
    wanted = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix,
                                            os.path.dirname(sys.executable))}
    inside = sorted(p for p in wanted if any(_within(p, h) and p != h for h in homes))
    return [p for p in inside if not any(_within(p, q) and p != q for q in inside)]


def _within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


@functools.cache
def warn_unisolated(reason: str) -> None:
    """Warn once per process that the sandbox fell back to resource limits only."""
    warnings.warn(f"coalign.sandbox: Linux namespaces unavailable ({reason}); running untrusted "
                  "code with resource limits only: it can use the network, read and write your "
                  "files and signal your processes", SandboxWarning, stacklevel=3)
