"""Write a run's report file atomically: a temp file in the target folder, then a rename."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from coalign.errors import StoreError
from coalign.report._data import build_report_data
from coalign.report._html import render_html
from coalign.store import RunStore

REPORT_NAME = "report.html"


def write_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Render the report of the run in ``run_dir`` to ``out`` (default ``RUN_DIR/report.html``).

    Raises:
        StoreError: ``run_dir`` holds no coalign run store, or ``out`` cannot be written.
    """
    with RunStore(run_dir, readonly=True) as store:
        page = render_html(build_report_data(store))
    target = Path(out) if out is not None else Path(run_dir) / REPORT_NAME
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise StoreError(f"report: cannot write to {target.parent} ({exc.strerror}); "
                         "pass --out with a writable path") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(page)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a report is meant to be shared
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise StoreError(f"report: cannot write {target} ({exc.strerror}); "
                         "pass --out with a writable path") from None
    return target
