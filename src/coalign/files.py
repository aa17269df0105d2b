"""Writing files so that no reader, and no kill, ever leaves half of one.

Every file coalign writes for later (run-dir artifacts, exports, caches, table shards, reports)
goes through a temp file in the same folder that is flushed to disk and renamed onto the target:
a reader sees the old file or the whole new one, and a failed write (full disk, read-only
mount, a kill) leaves the target as it was and no temp file behind. The helpers raise
``OSError`` unchanged; callers turn it into their own one-line error naming what they wrote.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["replacing", "replacing_dir", "write_atomic"]

# mkstemp makes 0600; what coalign writes is meant to be read by the user's other tools
SHARED_MODE = 0o644


@contextmanager
def replacing(path: Path, *, mode: int = SHARED_MODE) -> Iterator[Path]:
    """A temp path beside ``path`` for a writer that wants a file name (safetensors, sqlite,
    ``open``); when the block ends cleanly the file is synced and renamed onto ``path``,
    otherwise it is removed."""
    path = Path(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, mode)
        _sync(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # gone already after the rename


def write_atomic(path: Path, data: str | bytes | Iterable[str], *,
                 mode: int = SHARED_MODE) -> int:
    """Write text, bytes or an iterable of text chunks to ``path`` whole or not at all;
    returns how many chunks were written (1 for a str or bytes)."""
    chunks: Iterable[str | bytes] = [data] if isinstance(data, (str, bytes)) else data
    binary = isinstance(data, bytes)
    count = 0
    with replacing(path, mode=mode) as tmp:
        with open(tmp, "wb" if binary else "w", encoding=None if binary else "utf-8") as fh:
            for chunk in chunks:
                fh.write(chunk)
                count += 1
    return count


@contextmanager
def replacing_dir(path: Path, *, overwrite: bool = False) -> Iterator[Path]:
    """A temp folder beside ``path`` to fill; renamed onto ``path`` when the block ends
    cleanly (an existing folder is removed first only with ``overwrite``), else removed."""
    path = Path(path)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        yield tmp
        os.chmod(tmp, 0o755)  # mkdtemp makes 0700
        if overwrite and path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
