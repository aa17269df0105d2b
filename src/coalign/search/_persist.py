"""On-disk files of a search run: the state (atomic), the candidate archive (append-only), the view.

``search_state.json`` is replaced atomically (write a temp file in the same folder, fsync, rename)
so a kill at any instant leaves either the old or the new state, never half of one.
``candidate_archive.jsonl`` gets one line per evaluated candidate when its round closes; a line is
never rewritten, and a version already present is not appended twice (a resumed round may close
again after a kill between the archive append and the state write).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import ValidationError

from coalign import files
from coalign.errors import StoreError
from coalign.search._state import Candidate, SearchState
from coalign.search._viz import render_viz

STATE_FILE = "search_state.json"
ARCHIVE_FILE = "candidate_archive.jsonl"
VIZ_FILE = "viz.html"


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, text)


class SearchStore:
    """The run folder: ``search_state.json``, ``candidate_archive.jsonl`` and ``viz.html``."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)

    @property
    def state_path(self) -> Path:
        return self.folder / STATE_FILE

    @property
    def archive_path(self) -> Path:
        return self.folder / ARCHIVE_FILE

    @property
    def viz_path(self) -> Path:
        return self.folder / VIZ_FILE

    def exists(self) -> bool:
        return self.state_path.is_file()

    def save(self, state: SearchState) -> None:
        """Persist the state, then refresh the view (the view is derived, so it goes second)."""
        write_atomic(self.state_path, state.model_dump_json(indent=1))
        write_atomic(self.viz_path, render_viz(state))

    def load(self) -> SearchState:
        try:
            return SearchState.model_validate_json(self.state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StoreError(
                f"{self.state_path}: no search state here; start a new search instead of resuming"
            ) from None
        except (ValidationError, ValueError) as exc:
            first = str(exc).splitlines()[0]
            raise StoreError(
                f"{self.state_path}: unreadable search state ({first}); delete the folder to "
                "start over"
            ) from None

    def archived_versions(self) -> set[str]:
        if not self.archive_path.is_file():
            return set()
        return {rec["prompt_version"] for rec in self.read_archive()}

    def _drop_torn_tail(self) -> None:
        # a kill during an append can leave a last line without its newline: cut it off
        if not self.archive_path.is_file():
            return
        data = self.archive_path.read_bytes()
        if data and not data.endswith(b"\n"):
            with self.archive_path.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    def append_archive(self, candidates: list[Candidate], round_closed: int) -> int:
        """Append the candidates not archived yet; returns how many lines were written."""
        self._drop_torn_tail()
        seen = self.archived_versions()
        new = [c for c in candidates if c.prompt_version not in seen]
        if not new:
            return 0
        self.folder.mkdir(parents=True, exist_ok=True)
        with self.archive_path.open("a", encoding="utf-8") as f:
            for c in new:
                rec = c.model_dump(mode="json", exclude={"metrics"})
                rec["round_closed"] = round_closed
                rec["metrics"] = {k: v for k, v in c.metrics.items() if k != "per_example"}
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return len(new)

    def read_archive(self) -> list[dict]:
        if not self.archive_path.is_file():
            return []
        out = []
        for line in self.archive_path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a torn last line from a kill; it is cut off on the next append
        return out
