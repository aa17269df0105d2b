"""``RunLock``: one writer per run directory.

Two processes writing one run dir would each spend the full budget and leave one ledger mixed
with both runs' pairs and traces. The lock is an ``flock`` on ``run.lock`` held for as long as
the writer keeps its store open: the kernel releases it when the process dies, even by
``kill -9``, so a stale lock never blocks ``coalign resume``. Readers (``report``, exports)
take no lock.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from coalign.errors import StoreError

LOCK_NAME = "run.lock"


class RunLock:
    """An exclusive, non-blocking lock on ``run_dir``; raises ``StoreError`` when held."""

    def __init__(self, run_dir: Path) -> None:
        path = run_dir / LOCK_NAME
        try:
            # a file object, not a bare descriptor: a store dropped without close() still
            # releases the lock when it is collected
            self._file = open(path, "a+b")  # noqa: SIM115 - held for the store's life
        except OSError as exc:
            raise StoreError(f"run dir {run_dir} is not writable ({exc.strerror}); use another "
                             "--run-dir") from None
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.seek(0)
            holder = self._file.read(32).decode(errors="replace").strip() or "unknown"
            self._file.close()
            raise StoreError(f"run dir {run_dir} is in use by another coalign process (pid "
                             f"{holder}); wait for it to finish or use another --run-dir"
                             ) from None
        self._file.truncate(0)
        self._file.write(str(os.getpid()).encode())
        self._file.flush()

    def release(self) -> None:
        self._file.close()  # closing the file drops the flock; closing twice is harmless
