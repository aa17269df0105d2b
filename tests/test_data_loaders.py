"""Loaders on the real shared files, and their one-line errors on malformed input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coalign.data import (
    DataError,
    load_hotpotqa,
    load_musique,
    load_pubmedqa,
    pubmedqa_split,
)
from coalign.errors import ConfigError


def test_hotpotqa_real_file(shared_data: Path) -> None:
    examples = load_hotpotqa(shared_data / "hotpotqa" / "hotpotqa_dev_unified.jsonl")
    assert len(examples) == 488
    assert len({ex.id for ex in examples}) == 488
    first = examples[0]
    assert first.inputs["question"].startswith("Which battle occurred first")
    assert first.target == "Battle of Guam"
    assert len(first.inputs["paragraphs"]) == 10
    assert set(first.inputs["paragraphs"][0]) == {"title", "text"}
    titles = {p["title"] for p in first.inputs["paragraphs"]}
    # Every row carries exactly two gold paragraphs, and they are among its paragraphs.
    for ex in examples:
        assert len(ex.meta["supporting_titles"]) == 2
        assert set(ex.meta["supporting_titles"]) <= {p["title"] for p in ex.inputs["paragraphs"]}
    assert set(first.meta["supporting_titles"]) <= titles
    types = {ex.meta["type"] for ex in examples}
    assert types == {None, "bridge", "comparison"}


def test_default_path_and_env_override(shared_data: Path, monkeypatch, tmp_path: Path) -> None:
    assert len(load_hotpotqa(limit=5)) == 5
    monkeypatch.setenv("COALIGN_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match="hotpotqa_dev_unified.jsonl"):
        load_hotpotqa()
    (tmp_path / "hotpotqa").mkdir()
    src = shared_data / "hotpotqa" / "hotpotqa_dev_unified.jsonl"
    first_line = src.open(encoding="utf-8").readline()
    (tmp_path / "hotpotqa" / "hotpotqa_dev_unified.jsonl").write_text(first_line)
    assert [ex.target for ex in load_hotpotqa()] == ["Battle of Guam"]


def test_musique_real_file(shared_data: Path) -> None:
    examples = load_musique(shared_data / "musique" / "flashrag_format_musique_dev_first200.jsonl")
    assert len(examples) == 200
    first = examples[0]
    assert first.inputs["question"] == "Who is the spouse of the Green performer?"
    assert first.target == "Miquette Giraudy"
    assert first.meta["hops"] == ["Green (Steve Hillage album)", "Miquette Giraudy"]
    assert first.meta["decomposition"][0]["answer"] == "Steve Hillage"
    assert "answer_aliases" not in first.meta
    with_aliases = [ex for ex in examples if "answer_aliases" in ex.meta]
    assert len(with_aliases) == 65  # rows with more than one golden answer
    assert all(ex.meta["type"] == "2hop" for ex in examples)
    for ex in examples:
        assert set(ex.meta["supporting_titles"]) <= {p["title"] for p in ex.inputs["paragraphs"]}


def test_pubmedqa_real_file_and_split(shared_data: Path) -> None:
    examples = load_pubmedqa(shared_data / "pubmedqa" / "pqal_train500.json")
    assert len(examples) == 500
    first = examples[0]
    assert first.id == first.meta["pmid"] == "10808977"
    assert first.target == "yes"
    assert first.inputs["question"].startswith("Can tailored interventions")
    assert len(first.inputs["contexts"]) == len(first.meta["labels"]) > 0
    counts = {label: sum(ex.target == label for ex in examples) for label in ("yes", "no", "maybe")}
    assert counts == {"yes": 276, "no": 169, "maybe": 55}
    splits = pubmedqa_split()
    assert list(splits) == ["train"]  # the test half is held out of the shared data
    assert [ex.id for ex in splits["train"]] == [ex.id for ex in examples]


def test_limit(shared_data: Path) -> None:
    assert len(load_musique(limit=3)) == 3
    assert len(load_pubmedqa(limit=0)) == 0
    with pytest.raises(ConfigError, match="limit"):
        load_hotpotqa(limit=-1)


def _write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def _hotpot_row(**over) -> dict:
    row = {"id": "x", "question": "Q?", "answer": "A", "type": "bridge",
           "context": [{"title": "T", "text": "body", "is_supporting": True}]}
    row.update(over)
    return row


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"question": None}, "rows.jsonl line 2: field 'question' must be a string (got NoneType)"),
        ({"context": []}, "rows.jsonl line 2: field 'context' is an empty list"),
        ({"context": [{"title": "T", "text": "b"}]},
         "rows.jsonl line 2: field 'context[0].is_supporting' missing"),
        ({"answer": 3}, "rows.jsonl line 2: field 'answer' must be a string (got int)"),
    ],
)
def test_hotpotqa_malformed_row(tmp_path: Path, bad: dict, message: str) -> None:
    path = _write_jsonl(tmp_path / "rows.jsonl", [_hotpot_row(), _hotpot_row(**bad)])
    with pytest.raises(DataError) as info:
        load_hotpotqa(path)
    assert str(info.value) == message
    # The row before the bad one is fine: a limit that stops early reads it without error.
    assert len(load_hotpotqa(path, limit=1)) == 1


def test_missing_field_and_bad_json(tmp_path: Path) -> None:
    row = _hotpot_row()
    del row["question"]
    path = _write_jsonl(tmp_path / "a.jsonl", [row])
    with pytest.raises(DataError, match=r"^a.jsonl line 1: field 'question' missing$"):
        load_hotpotqa(path)
    path = _write_jsonl(tmp_path / "b.jsonl", [_hotpot_row(), "", "{not json"])
    with pytest.raises(DataError, match=r"^b.jsonl line 3: invalid JSON"):
        load_hotpotqa(path)
    with pytest.raises(DataError, match="not found"):
        load_musique(tmp_path / "absent.jsonl")


def test_musique_malformed(tmp_path: Path) -> None:
    row = {"id": "d", "question": "Q?", "golden_answers": [],
           "metadata": {"question_decomposition": []}}
    path = _write_jsonl(tmp_path / "m.jsonl", [row])
    with pytest.raises(DataError, match=r"m.jsonl line 1: field 'golden_answers' is an empty"):
        load_musique(path)
    row["golden_answers"] = ["A"]
    row["metadata"]["question_decomposition"] = [{"question": "q", "answer": "a",
                                                  "support_paragraph": {"idx": 1, "title": "T"}}]
    path = _write_jsonl(tmp_path / "m.jsonl", [row])
    message = ("m.jsonl line 1: field 'metadata.question_decomposition[0].support_paragraph."
               "paragraph_text' missing")
    with pytest.raises(DataError) as info:
        load_musique(path)
    assert str(info.value) == message


def test_pubmedqa_malformed(tmp_path: Path) -> None:
    item = {"QUESTION": "Q?", "CONTEXTS": ["c"], "final_decision": "perhaps"}
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"123": item}))
    with pytest.raises(DataError, match=r"^p.json PMID 123: field 'final_decision' must be one"):
        load_pubmedqa(path)
    item["final_decision"] = "no"
    item["CONTEXTS"] = "c"
    path.write_text(json.dumps({"123": item}))
    with pytest.raises(DataError, match=r"p.json PMID 123: field 'CONTEXTS' must be a list"):
        load_pubmedqa(path)
    path.write_text("[1, 2]")
    with pytest.raises(DataError, match="keyed by PMID"):
        load_pubmedqa(path)


def test_pubmedqa_split_partial_is_an_error(tmp_path: Path, shared_data: Path) -> None:
    item = {"QUESTION": "Q?", "CONTEXTS": ["c"], "final_decision": "no"}
    data = tmp_path / "p.json"
    data.write_text(json.dumps({"1": item, "2": item}))
    split_file = tmp_path / "s.json"
    split_file.write_text(json.dumps({"train": ["2", "1"], "test": ["9"]}))
    assert [ex.id for ex in pubmedqa_split(data, split_file)["train"]] == ["2", "1"]
    split_file.write_text(json.dumps({"train": ["1", "3"]}))
    with pytest.raises(DataError, match="split 'train' has 1 PMIDs absent"):
        pubmedqa_split(data, split_file)


def test_package_exports_resolve() -> None:
    import coalign.data as data

    assert sorted(data.__all__) == sorted(set(data.__all__))
    for name in data.__all__:
        assert getattr(data, name) is not None, name


def test_repeated_ids_non_finite_numbers_bad_utf8_and_deep_nesting(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "d.jsonl", [_hotpot_row(id="a"), _hotpot_row(id="b"),
                                               _hotpot_row(id="a")])
    with pytest.raises(DataError) as info:
        load_hotpotqa(path)
    assert str(info.value) == "d.jsonl line 3: id 'a' repeats the id of d.jsonl line 1"
    path = _write_jsonl(tmp_path / "n.jsonl", ['{"id": "a", "answer": NaN}'])
    with pytest.raises(DataError, match=r"^n.jsonl line 1: non-finite number NaN"):
        load_hotpotqa(path)
    path = tmp_path / "u.jsonl"
    path.write_bytes(json.dumps(_hotpot_row()).encode() + b"\n" + b'{"id": "\xff\xfe"}\n')
    with pytest.raises(DataError, match=r"^u.jsonl line 2: invalid UTF-8 at byte 8$"):
        load_hotpotqa(path)
    path = _write_jsonl(tmp_path / "deep.jsonl", ['{"id": ' + "[" * 100_000 + "]" * 100_000
                                                  + "}"])
    with pytest.raises(DataError, match=r"^deep.jsonl line 1: JSON nested too deeply$"):
        load_hotpotqa(path)


def test_hotpotqa_in_its_published_formats_reads_the_same(tmp_path: Path) -> None:
    from coalign.data import data_dir

    official = data_dir() / "hotpotqa" / "hipporag_hotpotqa_train_100.json"
    rows = json.loads(official.read_text())[:5]
    expected = load_hotpotqa(official, limit=5)
    assert expected[0].id == "5a77ec115542992a6e59dff7" and expected[0].target == "a spirit"
    assert set(expected[0].meta["supporting_titles"]) == {"Lilu (mythology)", "Alû"}
    assert expected[0].inputs["paragraphs"][0]["text"].startswith("Demon Dice, originally")
    hf = [{"id": r["_id"], "question": r["question"], "answer": r["answer"], "type": r["type"],
           "level": r["level"],
           "supporting_facts": {"title": [f[0] for f in r["supporting_facts"]],
                                "sent_id": [f[1] for f in r["supporting_facts"]]},
           "context": {"title": [c[0] for c in r["context"]],
                       "sentences": [c[1] for c in r["context"]]}} for r in rows]
    as_lines = _write_jsonl(tmp_path / "official.jsonl", rows)  # official rows, one a line
    for path in (_write_jsonl(tmp_path / "hf.jsonl", hf), as_lines):
        assert load_hotpotqa(path) == expected
    ircot = load_hotpotqa(data_dir() / "hotpotqa" / "ircot_format_hotpotqa_dev_500.jsonl",
                          limit=2)
    assert ircot[0].target == "Chief of Protocol" and len(ircot[0].meta["supporting_titles"]) == 2
    flash = load_hotpotqa(data_dir() / "hotpotqa" /
                          "flashrag_format_hotpotqa_dev_first200_fullwiki_context.jsonl", limit=1)
    assert flash[0].id == "dev_0" and flash[0].meta["type"] == "comparison"
    hf[1]["context"]["sentences"] = hf[1]["context"]["sentences"][:-1]
    with pytest.raises(DataError, match=r"^bad.jsonl line 2: field 'context' has 10 titles"):
        load_hotpotqa(_write_jsonl(tmp_path / "bad.jsonl", hf))
    rows[0]["context"][2] = ["title only"]
    with pytest.raises(DataError, match=r"^bad.json item 0: field 'context\[2\]' must be"):
        (tmp_path / "bad.json").write_text(json.dumps(rows))
        load_hotpotqa(tmp_path / "bad.json")


def test_a_repeated_key_is_refused_not_silently_merged(tmp_path: Path) -> None:
    from coalign.data import load_pubmedqa

    item = {"QUESTION": "q?", "CONTEXTS": ["c"], "final_decision": "yes"}
    body = json.dumps({"1": item})[:-1] + ", " + json.dumps({"1": item})[1:]
    (tmp_path / "p.json").write_text(body)  # PMID 1 twice: one item would vanish
    with pytest.raises(DataError, match=r"^p.json: key '1' given twice in one object$"):
        load_pubmedqa(tmp_path / "p.json")
    path = _write_jsonl(tmp_path / "r.jsonl", ['{"id": "a", "id": "b"}'])
    with pytest.raises(DataError, match=r"^r.jsonl line 1: key 'id' given twice"):
        load_hotpotqa(path)
