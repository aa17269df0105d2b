"""Code-generation datasets: MBPP (sanitized or full) and HumanEval-format JSONL.

Every loader returns the same shape, so one system runs on any of them:
``inputs = {"task": str, "example_test": str}`` (the task text, and one test the model is
shown so it can name the function the hidden tests call), ``target`` = the list of test
statements that decide pass/fail (the shown one included, as MBPP and EvalPlus score), and
``meta["test_setup"]`` = code run before the tests (imports).
"""

from __future__ import annotations

from pathlib import Path

from coalign.data._base import Example
from coalign.data._io import Fields, check_limit, first_char, iter_jsonl, read_json, resolve_file
from coalign.errors import ConfigError, DataError

__all__ = ["MBPP_SPLITS", "load_humaneval", "load_mbpp"]

MBPP_FILE = "mbpp/sanitized-mbpp.json"
# The task-id ranges of MBPP's published split (its README): few-shot prompts, test, validation,
# train. The sanitized set is a subset of all four.
MBPP_SPLITS: dict[str, range] = {
    "prompt": range(1, 11),
    "test": range(11, 511),
    "validation": range(511, 601),
    "train": range(601, 975),
}


def load_mbpp(path: Path | str | None = None, *, split: str | None = "test",
              limit: int | None = None) -> list[Example]:
    """Load MBPP problems, in task-id order.

    Args:
        path: the hand-verified ``sanitized-mbpp.json`` (a JSON array; default: the shared
            copy) or the full ``mbpp.jsonl`` (one object a line; ``text`` and
            ``test_setup_code`` in place of ``prompt`` and ``test_imports``); array or lines,
            sanitized or full fields, are told apart by content.
        split: keep the task ids of this published split (``test``, ``validation``,
            ``train``, ``prompt``), or ``None`` for all.
        limit: keep at most this many problems (after the split).

    Returns:
        Examples with ``id = "mbpp/<task_id>"``, the task text, the first assert as
        ``example_test``, every assert as ``target`` and the imports as ``meta["test_setup"]``.

    Raises:
        DataError: the file is missing or a problem is malformed (message names task and field).
        ConfigError: an unknown split.
    """
    check_limit(limit)
    if split is not None and split not in MBPP_SPLITS:
        raise ConfigError(f"split: must be one of {sorted(MBPP_SPLITS)} or None (got {split!r})")
    file = resolve_file(path, MBPP_FILE)
    examples = []
    seen: set[int] = set()
    for row in _mbpp_rows(file):
        task_id = row.get("task_id", int)
        if task_id in seen:
            raise row.fail("task_id", f"repeats {task_id}")
        seen.add(task_id)
        if split is not None and task_id not in MBPP_SPLITS[split]:
            continue
        if limit is not None and len(examples) >= limit:
            continue  # keep reading: a repeated id further on is still an error
        tests = row.strings("test_list", nonempty=True)
        full = row.get("prompt", str, optional=True) is None  # the full set's field names
        setup = (row.get("test_setup_code", str, optional=True) or "" if full
                 else "\n".join(row.strings("test_imports", optional=True)))
        examples.append(Example(
            id=f"mbpp/{task_id}",
            inputs={"task": row.text("text" if full else "prompt"), "example_test": tests[0]},
            target=tests,
            meta={"test_setup": setup, "reference_code": row.get("code", str, optional=True)},
        ))
    return examples


def load_humaneval(path: Path | str, *, limit: int | None = None) -> list[Example]:
    """Load HumanEval-format JSONL: ``task_id``, ``prompt``, ``test`` (a ``check`` function),
    ``entry_point``, the format most code benchmarks a user brings come in.

    The prompt (signature and docstring) is the task and names the function itself, so
    ``example_test`` is empty; the one hidden test defines ``check`` and calls it on the
    entry point.
    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise DataError(f"{file}: dataset file not found")
    examples = []
    seen: set[str] = set()
    check_limit(limit)
    for where, obj in iter_jsonl(file):
        row = Fields(where, obj)
        task_id = str(row.get("task_id", (str, int)))
        if task_id in seen:
            raise row.fail("task_id", f"repeats {task_id!r}")
        seen.add(task_id)
        if limit is not None and len(examples) >= limit:
            continue
        entry = row.text("entry_point")
        if not entry.isidentifier():
            raise row.fail("entry_point", f"must be a Python name (got {entry!r})")
        examples.append(Example(
            id=task_id,
            inputs={"task": row.text("prompt"), "example_test": ""},
            target=[f"{row.text('test')}\ncheck({entry})"],
            meta={"test_setup": "", "entry_point": entry,
                  "reference_code": row.get("canonical_solution", str, optional=True)},
        ))
    return examples


def _mbpp_rows(file: Path) -> list[Fields]:
    if first_char(file) != "[":
        return [Fields(where, obj) for where, obj in iter_jsonl(file)]
    data = read_json(file)
    if not isinstance(data, list):
        raise DataError(f"{file.name}: expected a JSON array of problems")
    rows = []
    for i, obj in enumerate(data):
        if not isinstance(obj, dict):
            raise DataError(f"{file.name} item {i}: expected an object (got {type(obj).__name__})")
        rows.append(Fields(f"{file.name} task {obj.get('task_id', f'#{i}')}", obj))
    return rows

