"""Result files of the benchmark scripts, and their ``--json PATH`` option.

A result file is the script's figures plus where they came from, under keys the committed files
already use: ``command`` (how to rerun it), ``commit`` (the code it ran) and ``machine`` (how
many cores, how busy, which Python: timings mean little without them). Files are replaced
atomically, so a run killed while writing leaves the previous file whole.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def add_json_option(parser: argparse.ArgumentParser) -> None:
    """The scripts' common ``--json PATH`` option (``args.json``: a Path or None)."""
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="also write the results, with command, commit and machine, here")


def git(*args: str) -> str | None:
    """``git ARGS`` in the repository, stripped; None outside a checkout or without git."""
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def head_commit() -> str | None:
    """The checked-out commit, with ``+dirty`` when the code (``src/``, the benchmark scripts)
    has uncommitted changes: a figure from such a run is not reproduced by the commit alone."""
    head = git("rev-parse", "HEAD")
    changed = git("status", "--porcelain", "--untracked-files=no", "--", "src",
                  "benchmarks/*.py")
    return f"{head}+dirty" if head and changed else head


def command() -> str:
    """The command line that started this process, as one would type it again."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    # under ``python -m benchmarks.x`` argv[0] is the file's absolute path: name the module
    program = ["-m", spec.name] if spec is not None and spec.name else sys.argv[:1]
    return "python " + shlex.join([*program, *sys.argv[1:]])


def machine() -> dict[str, Any]:
    """Facts about this machine now (the load average: how busy it is as the file is written)."""
    try:
        load: float | None = round(os.getloadavg()[0], 2)
    except OSError:  # not every platform has one
        load = None
    return {"cpu_count": os.cpu_count(), "load_avg_1m": load,
            "python": platform.python_version(), "platform": platform.platform()}


def write_json(path: Path, data: Any, *, indent: int | None = 2) -> None:
    """Write ``data`` as JSON to ``path`` atomically: a temporary file beside it, then a rename
    (creating the parent folder if needed)."""
    text = json.dumps(data, indent=indent) + "\n"  # before any file: unserializable data fails
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # .gitignore'd under results/
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_result(path: Path, result: dict[str, Any], *, commit: str | None = None,
                 indent: int | None = 2) -> dict[str, Any]:
    """Write ``result`` with ``command``, ``commit`` and ``machine`` added; return what was
    written. ``commit``: the one read when the run started (default: HEAD now)."""
    stamped = {**result, "command": command(), "commit": commit or head_commit(),
               "machine": machine()}
    write_json(path, stamped, indent=indent)
    return stamped
