"""benchmarks/check_docs.py: docs state no measured result that benchmarks/RESULTS.md lacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks import check_docs

ROOT = Path(__file__).resolve().parents[1]

RESULTS = """# Measured results

### A section

| method | test F1 |
|---|---|
| coalign | 0.452 [0.429, 0.476] |

coalign − TPE +0.010 [+0.002, +0.022]; 8.1x faster; 4 min 27 s wall; 43% of outputs.
"""


def _fixture(tmp_path: Path, doc: str, results: str = RESULTS) -> tuple[Path, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "feature.md").write_text(doc, encoding="utf-8")
    results_path = tmp_path / "RESULTS.md"
    results_path.write_text(results, encoding="utf-8")
    return docs, results_path


def _run(tmp_path: Path, doc: str) -> list[check_docs.Finding]:
    docs, results = _fixture(tmp_path, doc)
    return check_docs.check(docs, results)


def test_real_docs_pass():
    findings = [f for f in check_docs.check(ROOT / "docs", ROOT / "benchmarks" / "RESULTS.md",
                                            ROOT / "README.md")
                if not check_docs.is_pending(f)]
    assert findings == [], "\n".join(map(str, findings))


def test_pending_entries_are_still_real():
    # a PENDING entry that no longer fires is stale: drop it from check_docs.PENDING
    findings = check_docs.check(ROOT / "docs", ROOT / "benchmarks" / "RESULTS.md",
                                ROOT / "README.md")
    fired = {(f.path.name, f.token) for f in findings}
    for name, tokens in check_docs.PENDING.items():
        for token in tokens:
            assert (name, token) in fired, f"stale PENDING entry {name}: {token!r}"


def test_unlisted_figure_fails_with_file_and_line(tmp_path):
    findings = _run(tmp_path, "# Feature\n\nIt is fast.\n\nOn HotpotQA it scores 0.731 F1.\n")
    assert [(f.path.name, f.line, f.kind, f.token) for f in findings] == [
        ("feature.md", 5, "decimal", "0.731")]
    assert str(findings[0]).startswith(f"{tmp_path / 'docs' / 'feature.md'}:5: decimal '0.731'")


def test_every_kind_of_figure_is_caught(tmp_path):
    doc = ("a 12% gain, [−0.011, +0.031] paired, 3.2x faster, 16.8 s a run, 7.5 minutes, 15 µs,\n"
           "and +0.044 over the start\n")
    kinds = {(f.kind, f.token) for f in _run(tmp_path, doc)}
    assert kinds == {("percentage", "12%"), ("interval", "[−0.011, +0.031]"),
                     ("speed-up", "3.2x"), ("timing", "16.8 s"), ("timing", "7.5 minutes"),
                     ("timing", "15 µs"), ("decimal", "+0.044")}


def test_figures_in_results_pass(tmp_path):
    doc = ("On code_gen coalign scores 0.452 [0.429, 0.476] (see RESULTS.md); the warm start is\n"
           "+0.010 [+0.002,+0.022] above TPE, reuse is 8.1× faster, the run took 4 min, and 43 %\n"
           "of outputs: an unsigned 0.010 passes too.\n")
    assert _run(tmp_path, doc) == []


def test_sign_must_match(tmp_path):
    findings = _run(tmp_path, "The gain is −0.010 here.\n")
    assert [f.token for f in findings] == ["−0.010"]


def test_commit_hash_fails(tmp_path):
    doc = "Built at commit 8255fee, rerun at 4ba11c38c53b983c8602c483ca4c71a69d7e5497.\n"
    findings = _run(tmp_path, doc)
    assert [(f.kind, f.token) for f in findings] == [
        ("commit hash", "8255fee"), ("commit hash", "4ba11c38c53b983c8602c483ca4c71a69d7e5497")]


def test_hex_like_words_are_not_hashes(tmp_path):
    # no digit (a word), or another length (a 12-hex config digest, a 24-hex question id)
    doc = "decade, accede, facade1 is 7 chars; digest 34e79ec3d861, id 5a8b57f25542995d1e6f1371\n"
    assert [f.token for f in _run(tmp_path, doc)] == ["facade1"]


def test_numbers_in_fenced_and_inline_code_pass(tmp_path):
    doc = """# Feature

```bash
coalign table build DIR --minutes 60   # 0.731 F1, 12% faster, 16.8 s, commit 8255fee
```

~~~
gate_confidence: 0.95
~~~

    python -m benchmarks.alignment --judge 0.731

Set `gate_confidence: 0.95` (the tests assert a loss of `0.598139`).
"""
    assert _run(tmp_path, doc) == []


def test_list_continuation_is_prose_not_code(tmp_path):
    doc = "- an item\n\n    that goes on with 0.731 F1\n"
    assert [f.token for f in _run(tmp_path, doc)] == ["0.731"]


def test_version_numbers_and_plain_numbers_pass(tmp_path):
    doc = ("Verified on Linux 6.18; kernels older than 5.12 lack it. Python 3.12.1 works.\n"
           "It has 3 x 2 x 2 = 12 configs, 200 questions, 1,576 runs and k = 5; 0.5 is chance.\n")
    assert _run(tmp_path, doc) == []


def test_readme_is_checked(tmp_path):
    docs, results = _fixture(tmp_path, "nothing measured\n")
    readme = tmp_path / "README.md"
    readme.write_text("Installs in 9.25 s.\n", encoding="utf-8")
    findings = check_docs.check(docs, results, readme)
    assert [(f.path.name, f.line, f.token) for f in findings] == [("README.md", 1, "9.25 s")]


def test_cli_exit_codes(tmp_path):
    docs, results = _fixture(tmp_path, "It scores 0.731.\n")
    args = ["--docs", str(docs), "--results", str(results), "--readme", ""]
    assert check_docs.main(args) == 1
    (docs / "feature.md").write_text("It scores 0.452.\n", encoding="utf-8")
    assert check_docs.main(args) == 0


def test_runs_as_module_from_repo_root():
    done = subprocess.run([sys.executable, "-m", "benchmarks.check_docs"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""
