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
import sys
import warnings
from pathlib import Path

from coalign.sandbox._limits import Limits

_FLAGS = ("-S", "-s", "-P", "-B", "-u")
# Top-level host directories the interpreter may need (usrmerge makes most of them symlinks), and
# the one file of /etc the dynamic loader reads. Nothing else of the host is visible in the jail.
_TOP_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_FILES = ("/etc/ld.so.cache",)
_BOOT = "import marshal, sys; exec(marshal.load(sys.stdin.buffer))"


class SandboxWarning(RuntimeWarning):
    """The sandbox runs without namespaces: no network, filesystem or process isolation."""


@functools.cache
def program() -> bytes:
    """The child's program, marshalled: the jail and harness sources, then the call to start."""
    here = Path(__file__).parent
    parts = [(here / name).read_text(encoding="utf-8")
             for name in ("_jail.py", "_harness.py", "_supervisor.py")]
    source = "\n".join([*parts, "main(enter_jail, work, set_dumpable)\n"])
    return marshal.dumps(compile(source, "<coalign.sandbox>", "exec"))


def command() -> list[str]:
    return [sys.executable, *_FLAGS, "-c", _BOOT]


def environment(home: str) -> dict[str, str]:
    """Nothing inherited (no API keys); ``home`` is the child's working directory."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home,
            "PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8", "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8"}


def jail_spec(limits: Limits) -> dict:
    """What ``_jail.enter_jail`` needs: the host paths to bind read-only into the new root, the
    top-level symlinks to recreate there (``/bin -> usr/bin``), and the private /tmp's size."""
    binds, links = _root_contents()
    return {"binds": binds, "links": links, "tmp_mb": max(16, 4 * limits.file_size_mb)}


@functools.cache
def _root_contents() -> tuple[list[str], list[tuple[str, str]]]:
    links, wanted = [], ["/usr"]
    for top in _TOP_DIRS:
        if os.path.islink(top):
            links.append((top, os.readlink(top)))
        elif os.path.isdir(top):
            wanted.append(top)
    # The interpreter's installation, wherever it lives (a pyenv build under a home, a venv's
    # base): the real paths, since the symlinks leading there are not recreated.
    exe = os.path.realpath(sys.executable)
    wanted += [os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix,
                                             os.path.dirname(exe))]
    wanted = [p for p in dict.fromkeys(wanted) if os.path.isdir(p) and p != "/"]
    binds = [p for p in wanted if not any(_within(p, q) and p != q for q in wanted)]
    binds += [f for f in _FILES if os.path.isfile(f)]
    return binds, links


def _within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


@functools.cache
def warn_unisolated(reason: str) -> None:
    """Warn once per process that the sandbox fell back to resource limits only."""
    warnings.warn(f"coalign.sandbox: Linux namespaces unavailable ({reason}); running untrusted "
                  "code with resource limits only: it can use the network, read and write your "
                  "files and signal your processes", SandboxWarning, stacklevel=3)
