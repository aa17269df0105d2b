"""The second reliability pass (issue 42): one test per defect the hostile and careless-user probe
found, each failing before its fix. CLI cases run ``coalign.cli.main`` in-process, so a full disk
or a read-only folder can be simulated at the one write that meets it."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import coalign.export
import coalign.files
from coalign.cli import main
from coalign.component import LLMComponent
from coalign.config import SystemConfig
from coalign.data import get_metric
from coalign.data._files import DataFile, load_file
from coalign.errors import ConfigError, DataError, TrackingError
from coalign.export import FORMAT, VERSION, load_system
from coalign.lm import LMSpec, make_lm, parse_spec
from coalign.pairs import PreferencePair
from coalign.params import TextValue
from coalign.report import write_report
from coalign.store import DB_NAME, RunStore
from coalign.system import System
from coalign.task import Task
from tests.test_audit_support import FIXTURE_CONTRACT, FIXTURE_PAIRS
from tests.test_bad_inputs import STEP
from tests.test_report_support import _trace, populate

KEY = "SECRETKEY42"


def cli(monkeypatch, capsys, *args: object) -> tuple[int, str, str]:
    """``coalign ARGS`` in this process: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["coalign", *map(str, args)])
    with pytest.raises(SystemExit) as done:
        main()
    out = capsys.readouterr()
    return done.value.code, out.out, out.err


def assert_one_line_error(code: int, err: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err


def full_disk(monkeypatch) -> None:
    """Files written through ``coalign.files`` fail at their first write as on a full disk."""
    def full_open(*args, **kwargs):
        handle = open(*args, **kwargs)

        class Full:
            def __enter__(self):
                return self

            def __exit__(self, *exc: object) -> None:
                handle.close()

            def write(self, text: str) -> int:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return Full()
    monkeypatch.setattr(coalign.files, "open", full_open, raising=False)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# -- 1. endpoint specs parsed strictly, every printed URL redacted ------------------------------

@pytest.mark.parametrize("spec", [
    f"openai:@http://user:{KEY}@host/v1",  # no model id
    f"openai:user:{KEY}@host/v1",  # no scheme: the key would be the model id
    f"openai:http://user:{KEY}@host/v1",  # the URL where the model id goes
    f"openai:m@htp://user:{KEY}@host/v1",  # a mistyped scheme
    f"openai:m@http:///user:{KEY}@host/v1",  # no host: the key in the path
    f"openai:m@http://host/v1?api_key={KEY}",  # a key in the query
    f"opnai:m@http://user:{KEY}@host/v1",  # a mistyped backend
    f"llamacpp:http://user:{KEY}@host/m.gguf",
])
def test_mistyped_endpoint_spec_is_refused_without_echoing_its_key(spec, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://elsewhere.invalid/v1")
    with pytest.raises(ConfigError) as err:
        make_lm(spec)
    assert KEY not in str(err.value) and "\n" not in str(err.value)


def test_endpoint_url_scheme_is_case_insensitive(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://elsewhere.invalid/v1")
    spec = f"openai:fake@HTTP://user:{KEY}@host/v1"
    assert parse_spec(spec) == LMSpec("openai", "fake", f"http://user:{KEY}@host/v1")
    lm = make_lm(spec)
    assert lm.name == "openai:fake@http://host/v1" and KEY not in lm.base_url


def test_mlflow_error_line_redacts_the_tracking_uri(monkeypatch):
    pytest.importorskip("mlflow")
    from coalign.tracking import MLflowTracker

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    tracker = MLflowTracker(f"http://user:{KEY}@127.0.0.1:9/")  # nothing listens on port 9
    with pytest.raises(TrackingError) as err:
        tracker.open(None, "run", {}, {})
    assert KEY not in str(err.value) and "http://127.0.0.1:9/" in str(err.value)


# -- 2. one canonical rendering of a Text value's demos ---------------------------------------

def test_demo_fields_render_in_declared_input_order_whatever_the_dict_order(tmp_path):
    comp = LLMComponent("answerer", ["question", "info"], "answer", "Answer.")
    task = Task(System("qa", [comp], inputs=["question", "info"], output="answer"),
                get_metric("f1"))
    in_order = {"question": "Q?", "info": "I.", "answer": "A"}
    shuffled = {"zeta": "z", "answer": "A", "info": "I.", "alpha": "a", "question": "Q?"}
    inputs = {"question": "q", "info": "i"}
    msgs = comp.messages(inputs, TextValue("Answer.", (in_order,)))
    assert msgs[1].content == "Question: Q?\nInfo: I."  # as before: replay tables key on it
    extra = comp.messages(inputs, TextValue("Answer.", (shuffled,)))
    assert extra[1].content == "Question: Q?\nInfo: I.\nAlpha: a\nZeta: z"
    backwards = dict(reversed(in_order.items()))
    assert comp.messages(inputs, TextValue("Answer.", (backwards,))) == msgs

    def config(demo: dict) -> SystemConfig:
        return SystemConfig(task.system, {"answerer": {"prompt": TextValue("Answer.", (demo,))}})
    assert config(in_order).digest == config(backwards).digest
    # an exported file (the store and the export sort keys) builds the very same prompt
    exported = tmp_path / "system.json"
    exported.write_text(json.dumps({"format": FORMAT, "version": VERSION,
                                    "config": config(backwards).to_json()}, sort_keys=True))
    loaded = load_system(exported, task).config
    assert loaded.digest == config(in_order).digest
    assert comp.messages(inputs, loaded["answerer"]["prompt"]) == msgs


# -- 3. tracebacks that become one-line errors leaving nothing behind ---------------------------

def test_audit_of_deeply_nested_json_is_one_line(tmp_path, monkeypatch, capsys):
    deep = tmp_path / "pairs.jsonl"
    deep.write_text('{"pair_id": "x", "prompt": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    contract = tmp_path / "contract.json"
    contract.write_text('{"scope": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, _, err = cli(monkeypatch, capsys, "audit", deep, "--contract", FIXTURE_CONTRACT)
    assert_one_line_error(code, err)
    assert "pairs.jsonl:1: JSON nested too deeply" in err
    code, _, err = cli(monkeypatch, capsys, "audit", FIXTURE_PAIRS, "--contract", contract)
    assert_one_line_error(code, err)


def test_export_onto_a_read_only_location_is_one_line(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    with RunStore(run) as store:
        store.set_meta("run_config", {"system": "multihop_qa", "model": "m"})
        store.put_step(0, "accepted", {**STEP, "val_after": 0.5, "policies": []})

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    monkeypatch.setattr(coalign.files, "tempfile", types.SimpleNamespace(mkstemp=read_only))
    out = tmp_path / "ro" / "system.json"
    code, _, err = cli(monkeypatch, capsys, "export", run, "--out", out)
    assert_one_line_error(code, err)
    assert "Read-only file system" in err and not out.exists()


def test_export_pairs_on_a_full_disk_is_one_line_and_leaves_no_temp_file(
        tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    with RunStore(run) as store:
        store.put_pairs([PreferencePair("gen", "ex1", {"q": "x"}, {"a": "1"}, {"a": "2"}, 0.9,
                                        0.1, "a")])
    full_disk(monkeypatch)
    code, _, err = cli(monkeypatch, capsys, "export-pairs", run, "--contract",
                       FIXTURE_CONTRACT, "--out", tmp_path / "pairs.jsonl")
    assert_one_line_error(code, err)
    assert "No space left on device" in err
    assert not (tmp_path / "pairs.jsonl").exists() and leftovers(tmp_path) == []


def test_audit_json_on_a_full_disk_is_one_line_and_leaves_no_temp_file(
        tmp_path, monkeypatch, capsys):
    full_disk(monkeypatch)
    out = tmp_path / "report.json"
    code, stdout, err = cli(monkeypatch, capsys, "audit", FIXTURE_PAIRS, "--contract",
                            FIXTURE_CONTRACT, "--json", out)
    assert "status=SUPPORTED" in stdout  # the audit ran; only its file could not be written
    assert_one_line_error(code, err)
    assert not out.exists() and leftovers(tmp_path) == []


# -- 4. a full disk at the first write leaves no half-made run store ----------------------------

FIRST_WRITE_ON_A_FULL_DISK = textwrap.dedent("""
    import resource, signal, sys
    from coalign.errors import StoreError
    from coalign.store import RunStore

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100, hard))  # the lock's pid fits, a page not
    try:
        RunStore(sys.argv[1])
    except StoreError as exc:
        print("refused:", exc)
""")


def test_full_disk_at_the_first_store_write_leaves_no_empty_store(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-c", FIRST_WRITE_ON_A_FULL_DISK, str(run)],
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith("refused: ") and "rerun" in proc.stdout, proc.stderr
    assert not (run / DB_NAME).exists() and leftovers(run) == []
    with RunStore(run) as store:  # the rerun the error asked for
        store.set_meta("run_config", {"system": "x"})
    with RunStore(run, create=False) as store:  # and resume reads it
        assert store.get_meta("run_config") == {"system": "x"}


# -- 5. malformed dataset rows are refused naming file, line and field -------------------------

ROW = {"id": "a", "inputs": {"question": "q?", "paragraphs": [{"title": "t", "text": "x"}]},
       "target": "x"}


@pytest.mark.parametrize("row, fields, field", [
    ({**ROW, "target": 5}, None, "'target'"),
    ({**ROW, "inputs": {**ROW["inputs"], "question": 5}}, None, "'inputs.question'"),
    ({**ROW, "inputs": {**ROW["inputs"], "paragraphs": ["plain"]}}, None,
     "'inputs.paragraphs[0]'"),
    ({**ROW, "inputs": {**ROW["inputs"], "paragraphs": [{"title": "t"}]}}, None,
     "'inputs.paragraphs[0].text'"),
    ({"q": 5, "a": "x"}, {"question": "q", "target": "a"}, "'q'"),
    ({"q": "x", "ctx": ["plain"], "a": "x"}, {"question": "q", "paragraphs": "ctx",
                                              "target": "a"}, "'ctx[0]'"),
])
def test_malformed_dataset_row_is_refused_naming_file_line_and_field(tmp_path, row, fields,
                                                                      field):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(ROW) + "\n" + json.dumps(row) + "\n")
    if fields is not None:  # a mapped file: its first row mapped too
        path.write_text(json.dumps({"q": "ok", "ctx": [], "a": "x"}) + "\n" + json.dumps(row)
                        + "\n")
    with pytest.raises(DataError, match=rf"^rows\.jsonl line 2: field {re.escape(field)} "):
        load_file(DataFile(path, fields))


def test_numeric_targets_of_other_rows_stay_accepted(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"id": "a", "inputs": {"question": "2+3?"}, "target": 5}) + "\n")
    assert load_file(DataFile(path))[0][0].target == 5  # the user's own metric scores it


# -- 6. control characters in model text are shown escaped in the report -----------------------

def test_report_shows_control_characters_as_visible_escapes(tmp_path):
    keys = populate(tmp_path)
    hostile = "\x1b[31mred\x1b[0m \x00 bell\x07 \u202eevil"
    with RunStore(tmp_path) as store:
        store.put_trace("val", _trace("e1", keys["step2"], hostile, 0.5))  # replaces its answer
    page = write_report(tmp_path).read_bytes()
    for raw in ("\x1b", "\x00", "\x07", "\u202e"):
        assert raw.encode() not in page
    assert "␛[31mred␛[0m ␀ bell␇ \\u202eevil" in page.decode("utf-8")


def test_evaluate_json_into_a_missing_folder_is_refused_before_the_evaluation(tmp_path):
    """``evaluate --json`` into a folder that does not exist used to run the whole evaluation
    and then end in a traceback; now one line, before anything runs."""
    import subprocess
    import sys
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures" / "tables" / "multihop_qa_8q"
    coalign = str(Path(sys.executable).parent / "coalign")
    proc = subprocess.run([coalign, "evaluate", "multihop_qa", "--data", "hotpotqa", "--lm",
                           f"replay:{fixture}", "--limit", "2", "--run-dir", str(tmp_path / "ev"),
                           "--json", str(tmp_path / "no" / "such" / "out.json")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "folder" in lines[0] and "does not exist" in lines[0], proc.stderr
    assert not (tmp_path / "ev").exists()
