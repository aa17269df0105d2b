"""Model and config text carrying terminal markup and HTML: optimize, resume and report all
complete, and the payloads come out literally (a ``[/x]`` in a step's value once crashed every
resume of its run)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from tests.endpoint_server import FaultServer

pytestmark = pytest.mark.server

MARKUP = "[/x] [bold red]care[/bold red]"
PAYLOAD = (f"{MARKUP} <script>alert(1)</script> [link=http://evil.example]here[/link] Answer "
           "the question using the facts. \\")


def coalign(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coalign", *args], capture_output=True,
                          text=True, timeout=600, env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"})


def test_markup_and_html_payloads_are_printed_and_reported_literally(tmp_path):
    run_dir = tmp_path / "run"
    with FaultServer() as server:
        # replies echo the whole prompt (the payload instruction included): scores then differ
        # by instruction, so the loop has pairs to learn from and values to propose
        server.reply = lambda body: "echo: " + " ".join(m["content"] for m in body["messages"])
        config = tmp_path / "run.yaml"
        config.write_text(yaml.safe_dump({
            "system": "multihop_qa", "data": "world", "model": f"openai:m@{server.url}",
            "split": {"train": 3, "val": 3, "test": 2, "seed": 0},
            "components": ["answer_generator"],
            "start": {"answer_generator": {"prompt": PAYLOAD}},
            "budget": {"iterations": 1, "search_size": 2, "fresh_inputs": 1, "rollout_n": 2,
                       "text_candidates": 2, "text_steps": 1, "text_alternatives": 2}}))
        first = coalign("optimize", str(config), "--run-dir", str(run_dir))
        assert first.returncode == 0, first.stderr[-2000:]
        again = coalign("resume", str(run_dir))  # prints the stored steps again
        assert again.returncode == 0, again.stderr[-2000:]
    assert f"starting from answer_generator.prompt = {PAYLOAD!r}" in first.stdout
    for out in (first.stdout, again.stdout):
        steps = [line for line in out.splitlines() if line.startswith("step ")]
        assert steps and all(MARKUP in line for line in steps)  # an edit of the payload
        final = [line for line in out.splitlines() if line.startswith("final configuration:")]
        assert len(final) == 1 and MARKUP in final[0]  # the payload or an edit of it
    report = coalign("report", str(run_dir))
    assert report.returncode == 0, report.stderr[-2000:]
    html = (run_dir / "report.html").read_text()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and MARKUP in html
