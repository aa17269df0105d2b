"""MBPP and HumanEval-format loaders: real shared files, and one-line errors on bad rows."""

from __future__ import annotations

import json

import pytest

from coalign.data import DataError, load_humaneval, load_mbpp
from coalign.errors import ConfigError
from coalign.runner import load_dataset


def test_sanitized_test_split_shape():
    examples = load_mbpp()
    assert len(examples) == 257  # sanitized problems with task ids 11-510
    first = examples[0]
    assert first.id == "mbpp/11"
    assert first.inputs["example_test"] == first.target[0]
    assert first.inputs["example_test"].startswith("assert remove_Occ(")
    assert all(t.startswith("assert") for e in examples for t in e.target)
    assert [int(e.id.split("/")[1]) for e in examples] == sorted(
        int(e.id.split("/")[1]) for e in examples)


def test_splits_and_limits():
    assert len(load_mbpp(split=None)) == 427
    assert {e.id for e in load_mbpp(split="validation")}.isdisjoint(
        e.id for e in load_mbpp(split="test"))
    assert [e.id for e in load_mbpp(limit=3)] == ["mbpp/11", "mbpp/12", "mbpp/14"]
    assert len(load_dataset("mbpp", limit=5)) == 5
    with pytest.raises(ConfigError, match="split"):
        load_mbpp(split="dev")


def test_imports_become_setup():
    with_setup = [e for e in load_mbpp(split=None) if e.meta["test_setup"]]
    assert with_setup and all("import" in e.meta["test_setup"] for e in with_setup)


def test_full_jsonl_format(tmp_path):
    from coalign.data import data_dir

    examples = load_mbpp(data_dir() / "mbpp" / "mbpp.jsonl")
    assert len(examples) == 500
    assert examples[0].id == "mbpp/11" and len(examples[0].target) == 3


@pytest.mark.parametrize("rows, problem", [
    ([{"task_id": 11, "prompt": "p", "test_list": []}], "test_list' is an empty list"),
    ([{"task_id": 11, "prompt": "p", "test_list": [1]}], "test_list[0]' must be a string"),
    ([{"task_id": "11", "prompt": "p", "test_list": ["assert 1"]}], "task_id' must be an int"),
    ([{"task_id": 11, "prompt": " ", "test_list": ["assert 1"]}], "prompt' is empty"),
    ([{"task_id": 11, "prompt": "p", "test_list": ["assert 1"]}] * 2, "repeats 11"),
])
def test_bad_mbpp_rows(tmp_path, rows, problem):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(rows))
    with pytest.raises(DataError, match="m.json task") as info:
        load_mbpp(path)
    assert problem in str(info.value) and "\n" not in str(info.value)


def test_humaneval_format(tmp_path):
    path = tmp_path / "he.jsonl"
    rows = [{"task_id": "HumanEval/0", "prompt": "def add(a, b):\n    \"\"\"Sum.\"\"\"\n",
             "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
             "entry_point": "add", "canonical_solution": "    return a + b\n"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (example,) = load_humaneval(path)
    assert example.id == "HumanEval/0" and example.inputs["example_test"] == ""
    assert example.target == [rows[0]["test"] + "\ncheck(add)"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**rows[0], "entry_point": "add me"}) + "\n")
    with pytest.raises(DataError, match="entry_point"):
        load_humaneval(bad)
    bad.write_text((json.dumps(rows[0]) + "\n") * 2)
    with pytest.raises(DataError, match="repeats"):
        load_humaneval(bad)
    with pytest.raises(DataError, match="not found"):
        load_humaneval(tmp_path / "missing.jsonl")
