"""The loop's decisions on deterministic toy runs are those it made before its redesign (issue
22): the fixture was written by the old loop (``python -m tests.loop_fingerprint``), and the run
dirs under ``fixtures/old_runs`` by the old ledger format, which must still resume."""

import json
import shutil

import pytest

from tests.loop_fingerprint import CASES, FIXTURE, decisions, fingerprints
from tests.selector_toy import selector_loop
from tests.test_optimize_loop import NeverAccept, make_optimizer, writer_lm

EXPECTED = json.loads(FIXTURE.read_text())
OLD_RUNS = FIXTURE.parent / "old_runs"


@pytest.mark.parametrize("name", list(CASES))
def test_same_decisions_as_before_the_redesign(tmp_path, name):
    assert fingerprints(tmp_path, [name])[name] == EXPECTED[name]


def _old_run(tmp_path, name):
    shutil.copytree(OLD_RUNS / name, tmp_path / name)
    return tmp_path / name


def test_a_run_dir_of_the_old_ledger_format_resumes_with_the_same_decisions(tmp_path):
    # four rejected steps written by the old loop: their rejections are rebuilt from the old
    # reason strings, and the resumed run continues exactly as an uninterrupted one did
    opt = make_optimizer(_old_run(tmp_path, "toy_never_accept"), writer_lm(), iterations=10)
    opt.s.gate = NeverAccept()
    opt.run()
    assert json.loads(json.dumps(decisions(opt))) == EXPECTED["never_accept_resumed"]


def test_an_old_run_dir_with_an_accepted_selector_resumes(tmp_path):
    opt = selector_loop(_old_run(tmp_path, "selector"), iterations=4)
    opt.run()
    assert json.loads(json.dumps(decisions(opt))) == EXPECTED["selector"]
