"""A table restricted to some of its finished questions: a smaller pool over the same space.

The space digest leaves the pool out, so a subset is the same space with fewer questions and
only those questions' records. Uses: running the loop on the finished part of a table that is
still building (the loop needs every pool question finished), and tiny committed fixtures made
of real LLM outputs.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from coalign.errors import ConfigError
from coalign.tables._shards import LEVELS, ShardSet
from coalign.tables._table import Table


def subset_table(source: str | Path, target: str | Path, *,
                 questions: int | Sequence[str] | None = None,
                 level: str = "greedy") -> Table:
    """Write a table at ``target`` whose pool is ``questions`` of ``source``'s questions
    finished at ``level``: all of them (``None``), the first n in pool order (an int), or
    these ids. ``target`` must not hold a table yet; it appears complete or not at all.

    Raises:
        ConfigError: a bad level or count, a question that is not finished, or an existing
            target.
    """
    if level not in LEVELS:
        raise ConfigError(f"table subset: level {level!r} is not one of {', '.join(LEVELS)}")
    src = Table(source)
    finished = [e.id for e in src.finished(level)]
    chosen = _choose(finished, questions, src.directory, level)
    target = Path(target)
    if target.exists() and any(target.iterdir()):
        raise ConfigError(f"table subset: {target} exists and is not empty")
    space = dataclasses.replace(src.space, questions=tuple(chosen),
                                notes=_notes(src, len(chosen), questions))
    keep = set(chosen)
    target.parent.mkdir(parents=True, exist_ok=True)
    # build beside the target and rename: a killed subset leaves no half table behind
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        shards = ShardSet(tmp, space.system, space.digest, writer=True)
        for key, entry in src.shards.entries.items():
            if entry.question in keep:
                shards.append(key, entry)
        for key, outcome in src.shards.outcomes.items():
            if outcome.question in keep:
                shards.append_outcome(key, outcome)
        for (question, _), done in src.shards.done.items():
            if question in keep:
                shards.mark_done(done)
        for question in sorted(src.shards.pinned & keep):
            shards.mark_pinned(question)
        shards.close()
        space.save(tmp)
        if target.exists():
            target.rmdir()
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Table(target)


def _notes(src: Table, n: int, questions: int | Sequence[str] | None) -> dict:
    """The source's notes, its pool's described as the part taken (notes: not in the digest)."""
    notes = dict(src.space.notes)
    which = ("the first" if isinstance(questions, int) else "all" if questions is None
             else "chosen:")
    pool = f" ({notes['pool']})" if "pool" in notes else ""
    notes["pool"] = f"{which} {n} finished questions of {src.directory.name}'s pool{pool}"
    return notes


def _choose(finished: list[str], questions: int | Sequence[str] | None, where: Path,
            level: str) -> list[str]:
    if questions is None:
        chosen = finished
    elif isinstance(questions, int):
        if not 1 <= questions <= len(finished):
            raise ConfigError(f"table subset: {questions} questions asked; {where} has "
                              f"{len(finished)} finished at {level}")
        chosen = finished[:questions]
    else:
        done = set(finished)
        missing = [q for q in questions if q not in done]
        if missing:
            raise ConfigError(f"table subset: question {missing[0]!r} is not finished at "
                              f"{level} in {where}")
        chosen = list(dict.fromkeys(questions))
    if not chosen:
        raise ConfigError(f"table subset: {where} has no question finished at {level}")
    return chosen
