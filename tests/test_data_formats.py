"""Dataset files in their public formats: told apart by content, read from a few real rows of
each (converted in the test where the shared data holds another format), and one-line errors
naming file, row and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coalign.data import DataFile, detect_format, load_file, load_hotpotqa, load_pubmedqa
from coalign.errors import ConfigError, DataError
from coalign.runner import load_data
from coalign.systems import SYSTEMS


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def official_hotpot(shared_data: Path, n: int = 3) -> list[dict]:
    return json.loads((shared_data / "hotpotqa" / "hipporag_hotpotqa_train_100.json")
                      .read_text())[:n]


def to_hf(row: dict) -> dict:
    """An official HotpotQA row as the Hugging Face ``hotpot_qa`` dataset exports it."""
    return {"id": row["_id"], "question": row["question"], "answer": row["answer"],
            "type": row["type"], "level": row["level"],
            "supporting_facts": {"title": [f[0] for f in row["supporting_facts"]],
                                 "sent_id": [f[1] for f in row["supporting_facts"]]},
            "context": {"title": [c[0] for c in row["context"]],
                        "sentences": [c[1] for c in row["context"]]}}


@pytest.mark.parametrize("relative, name, container, first_id", [
    ("hotpotqa/hotpotqa_dev_unified.jsonl", "hotpotqa-unified", "JSONL",
     "5a71166d5542994082a3e576"),
    ("hotpotqa/ircot_format_hotpotqa_dev_500.jsonl", "hotpotqa-ircot", "JSONL",
     "5a8c7595554299585d9e36b6"),
    ("hotpotqa/flashrag_format_hotpotqa_dev_first200_fullwiki_context.jsonl",
     "hotpotqa-flashrag", "JSONL", "dev_0"),
    ("hotpotqa/hipporag_hotpotqa_train_100.json", "hotpotqa-official", "JSON array",
     "5a77ec115542992a6e59dff7"),
    ("musique/flashrag_format_musique_dev_first200.jsonl", "musique-flashrag", "JSONL", "dev_0"),
    ("musique/hipporag_musique_train_100.json", "musique", "JSON array", "2hop__150763_14904"),
    ("pubmedqa/pqal_train500.json", "pubmedqa", "JSON object", "10808977"),
    ("mbpp/mbpp.jsonl", "mbpp", "JSONL", "mbpp/1"),
    ("mbpp/sanitized-mbpp.json", "mbpp", "JSON array", "mbpp/2"),
])
def test_real_files_are_told_apart_by_content(shared_data, relative, name, container, first_id):
    path = shared_data / relative
    found, described = detect_format(path)
    assert found == name and described.endswith(f"({container})")
    examples, read_as = load_file(DataFile(path), limit=3)
    assert read_as == described and len(examples) == 3 and examples[0].id == first_id
    assert examples[0].target not in (None, "", [])


def test_hotpotqa_hf_jsonl_reads_as_the_official_rows(shared_data, tmp_path):
    rows = official_hotpot(shared_data)
    hf = write_jsonl(tmp_path / "hotpotqa_distractor.jsonl", [to_hf(r) for r in rows])
    examples, described = load_data(str(hf))
    assert described == f"{hf} read as HotpotQA, Hugging Face datasets rows (JSONL)"
    official = tmp_path / "official.json"  # the suffix says JSON; the content decides
    official.write_text("\n".join(json.dumps(r) for r in rows))
    assert load_file(DataFile(official))[0] == examples == load_hotpotqa(
        shared_data / "hotpotqa" / "hipporag_hotpotqa_train_100.json", limit=3)
    assert examples[0].target == "a spirit"
    SYSTEMS["multihop_qa"]("m").check_inputs(examples, "hf")  # fits the QA system's inputs


def test_2wikimultihopqa_official_rows(shared_data, tmp_path):
    # 2Wiki's official JSON is HotpotQA's plus evidence triples (rows built from real ones)
    rows = [{**r, "type": "compositional", "evidences": [["A", "director", "B"]]}
            for r in official_hotpot(shared_data, 2)]
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(rows, indent=1))
    examples, described = load_file(DataFile(path))
    assert described == "2WikiMultiHopQA, official format (JSON array)"
    assert [e.meta["type"] for e in examples] == ["compositional"] * 2
    assert examples[1].inputs["question"] == rows[1]["question"]


def test_pubmedqa_test_file_with_its_ground_truth_file(shared_data, tmp_path):
    items = json.loads((shared_data / "pubmedqa" / "pqal_train500.json").read_text())
    chosen = list(items)[:4]
    unlabelled = {p: {k: v for k, v in items[p].items() if k != "final_decision"}
                  for p in chosen}
    test = tmp_path / "test_set.json"
    test.write_text(json.dumps(unlabelled, indent=2))  # pretty-printed: several lines
    truth = tmp_path / "test_ground_truth.json"
    truth.write_text(json.dumps({p: items[p]["final_decision"] for p in chosen[1:3]}))
    examples, described = load_file(DataFile(test, ground_truth=truth))
    assert described == "PubMedQA, ori_pqal.json format (JSON object)"
    assert [(e.id, e.target) for e in examples] == [(p, items[p]["final_decision"])
                                                   for p in chosen[1:3]]
    # the labelled original with the same ground truth: just the ground truth's items
    whole = load_pubmedqa(shared_data / "pubmedqa" / "pqal_train500.json", ground_truth=truth)
    assert [e.id for e in whole] == chosen[1:3]
    with pytest.raises(DataError, match=rf"^test_set.json PMID {chosen[0]}: field "
                                        "'final_decision' missing; an unlabelled test file"):
        load_file(DataFile(test))
    truth.write_text(json.dumps({"999": "yes"}))
    with pytest.raises(DataError, match=r"^test_ground_truth.json PMID 999: not in test_set"):
        load_file(DataFile(test, ground_truth=truth))
    truth.write_text(json.dumps({chosen[0]: "perhaps"}))
    with pytest.raises(DataError, match=r"PMID \d+: label must be one of yes/no/maybe"):
        load_file(DataFile(test, ground_truth=truth))
    with pytest.raises(ConfigError, match="ground_truth labels a PubMedQA file; x.jsonl is "):
        load_file(DataFile(write_jsonl(tmp_path / "x.jsonl", [to_hf(official_hotpot(
            shared_data, 1)[0])]), ground_truth=truth))


def test_musique_official_rows_and_a_dangling_hop(shared_data, tmp_path):
    rows = json.loads((shared_data / "musique" / "hipporag_musique_train_100.json")
                      .read_text())[:2]
    path = write_jsonl(tmp_path / "musique_ans_v1.0_dev.jsonl", rows)
    examples, described = load_file(DataFile(path))
    assert described == "MuSiQue, official format (JSONL)"
    first = examples[0]
    assert first.target == "G. Stanley Hall" and first.meta["answer_aliases"] == ["Stanley Hall"]
    assert len(first.inputs["paragraphs"]) == 20 and first.meta["answerable"] is True
    assert first.meta["hops"] == ["Journal of Psychotherapy Integration", "Adolescence"]
    rows[1]["question_decomposition"][0]["paragraph_support_idx"] = 99
    write_jsonl(path, rows)
    with pytest.raises(DataError, match=r"^musique_ans_v1.0_dev.jsonl line 2: field "
                                        r"'question_decomposition\[0\].paragraph_support_idx' "
                                        "names paragraph 99"):
        load_file(DataFile(path))


def test_humaneval_and_coalign_rows(tmp_path):
    he = write_jsonl(tmp_path / "HumanEval.jsonl", [
        {"task_id": "HumanEval/0", "prompt": "def add(a, b):\n", "entry_point": "add",
         "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
         "canonical_solution": "    return a + b\n"}])
    examples, described = load_file(DataFile(he))
    assert described == "HumanEval (JSONL)" and examples[0].id == "HumanEval/0"
    SYSTEMS["code_gen"]("m").check_inputs(examples, "he")
    own = write_jsonl(tmp_path / "own.jsonl", [{"id": 1, "inputs": {"q": "x"}, "target": 0}])
    examples, described = load_file(DataFile(own))
    assert described == "coalign rows {id, inputs, target} (JSONL)"
    assert examples[0].target == 0 and examples[0].inputs == {"q": "x"}


def test_a_field_mapping_reads_any_jsonl(tmp_path):
    rows = [{"qid": "a", "q": "Who?", "ctx": [{"title": "T", "text": "t"}], "gold": {"ans": "X"}},
            {"qid": "b", "q": "What?", "ctx": [], "gold": {"ans": "Y"}}]
    path = write_jsonl(tmp_path / "mine.jsonl", rows)
    fields = {"question": "q", "paragraphs": "ctx", "target": "gold.ans", "id": "qid"}
    examples, described = load_file(DataFile(path, fields))
    assert described == "records mapped by data.fields"
    assert [(e.id, e.target) for e in examples] == [("a", "X"), ("b", "Y")]
    assert examples[0].inputs == {"question": "Who?", "paragraphs": rows[0]["ctx"]}
    numbered = load_file(DataFile(path, {"question": "q", "target": "qid"}))[0]
    assert [e.id for e in numbered] == ["0", "1"]  # no id mapped: rows numbered from 0


@pytest.mark.parametrize("fields, row, error, match", [
    ({"question": "q", "target": "gold"}, {"q": "?"}, DataError,
     r"^m.jsonl line 2: field 'gold' missing \(data.fields maps 'target' to 'gold'; the row "
     r"has \['q'\]\)$"),
    ({"question": "q", "target": "g.a"}, {"q": "?", "g": {}}, DataError,
     r"^m.jsonl line 2: field 'g.a' missing"),
    ({"question": "q", "target": "g"}, {"q": "?", "g": None}, DataError,
     r"^m.jsonl line 2: field 'g' \(the target\) is null$"),
    ({"question": "q", "target": "g", "id": "k"}, {"q": "?", "g": 1, "k": [1]}, DataError,
     r"^m.jsonl line 2: field 'k' \(the id\) must be a string or an int \(got list\)$"),
    ({"question": "q", "target": "g", "id": "k"}, {"q": "?", "g": 1, "k": "a"}, DataError,
     r"^m.jsonl line 2: id 'a' repeats the id of m.jsonl line 1$"),
    ({"question": "q"}, {"q": "?"}, ConfigError, r"^data.fields: map 'target'"),
    ({"target": "g"}, {"g": 1}, ConfigError, r"^data.fields: map at least one system input"),
])
def test_a_bad_mapping_or_row_is_one_line(tmp_path, fields, row, error, match):
    path = write_jsonl(tmp_path / "m.jsonl", [{"q": "?", "g": {"a": 1}, "gold": 1, "k": "a"}, row])
    with pytest.raises(error, match=match):
        load_file(DataFile(path, fields))


@pytest.mark.parametrize("content, match", [
    ('{"question": "q", "answer": "a"}\n', r"^f.jsonl: no known dataset format \(its first "
     r"record has fields \['answer', 'question'\]\); expected coalign rows"),
    ("", r"^f.jsonl: no known dataset format \(it holds no record\)"),
    ("[]", r"^f.jsonl: no known dataset format \(it holds no record\)"),
    ("[1, 2]", r"^f.jsonl: no known dataset format \(its first record is a int\)"),
    ("id,question\n1,q\n", r"^f.jsonl: no known dataset format \(it begins with 'i', not "
     r"with \[ or \{\)"),
    ('{"id": "a", "target": 1}\n', r"^f.jsonl line 1: field 'inputs' missing \(coalign rows"),
    ('{"id": ' + "[" * 100_000 + "]" * 100_000 + "}\n", r"^f.jsonl: JSON nested too deeply"),
    ('{"inputs": {}, \n', r"^f.jsonl: invalid JSON"),
])
def test_an_unknown_format_names_the_file_and_what_was_expected(tmp_path, content, match):
    path = tmp_path / "f.jsonl"
    path.write_text(content)
    with pytest.raises(DataError, match=match) as info:
        load_data(str(path))
    assert "\n" not in str(info.value)


def test_examples_must_carry_the_systems_inputs(shared_data, tmp_path):
    hf = write_jsonl(tmp_path / "h.jsonl", [to_hf(r) for r in official_hotpot(shared_data, 2)])
    examples = load_file(DataFile(hf))[0]
    with pytest.raises(ConfigError, match=r"^dataset 'h.jsonl': system 'pubmedqa_select' needs "
                                          r"input 'contexts', missing from example '5a77ec"):
        SYSTEMS["pubmedqa_select"]("m").check_inputs(examples, "'h.jsonl'")
