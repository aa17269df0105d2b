"""CachedLM: hits, misses, keys, persistence, threads and a killed writer."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from coalign.errors import StoreError
from coalign.lm import CachedLM, chat
from tests.fakes import FakeLM

SRC = Path(__file__).resolve().parents[1] / "src"


def _echo(request):
    return f"{request.messages[-1].content}#{request.sample_index}@{request.temperature}"


def test_hit_returns_cached_without_calling_inner(tmp_path):
    inner = FakeLM(_echo)
    lm = CachedLM(inner, tmp_path / "c.sqlite")
    first = lm.generate(chat("hello", temperature=0.7))
    second = lm.generate(chat("hello", temperature=0.7))
    assert inner.calls == 1
    assert (lm.hits, lm.misses) == (1, 1)
    assert not first.cached and second.cached
    assert (second.text, second.prompt_tokens, second.completion_tokens, second.model) == (
        first.text,
        first.prompt_tokens,
        first.completion_tokens,
        first.model,
    )


def test_key_covers_sample_index_and_every_field(tmp_path):
    inner = FakeLM(_echo)
    lm = CachedLM(inner, tmp_path / "c.sqlite")
    base = chat("q", temperature=0.7)
    variants = [
        base,
        chat("q", temperature=0.7, sample_index=1),
        chat("q", temperature=0.7, sample_index=2),
        chat("q", temperature=0.5),
        chat("q", temperature=0.7, max_tokens=5),
        chat("q", temperature=0.7, stop=("\n",)),
        chat("q", system="s", temperature=0.7),
        chat("q", temperature=0.7, model="other"),
    ]
    texts = [lm.generate(r).text for r in variants]
    assert inner.calls == len(variants) and lm.hits == 0
    assert len({texts[0], texts[1], texts[2]}) == 3  # distinct Monte-Carlo samples
    for r in variants:
        assert lm.generate(r).cached
    assert lm.hits == len(variants)


def test_backend_name_is_part_of_the_key(tmp_path):
    path = tmp_path / "c.sqlite"
    a = CachedLM(FakeLM(lambda r: "from-a", name="a"), path)
    b = CachedLM(FakeLM(lambda r: "from-b", name="b"), path)
    assert a.generate(chat("q")).text == "from-a"
    assert b.generate(chat("q")).text == "from-b"
    assert a.generate(chat("q")).text == "from-a"


def test_persists_across_reopen(tmp_path):
    path = tmp_path / "sub" / "c.sqlite"
    lm = CachedLM(FakeLM(_echo), path)
    text = lm.generate(chat("keep me")).text
    lm.close()
    inner = FakeLM(lambda r: "different")
    again = CachedLM(inner, path)
    got = again.generate(chat("keep me"))
    assert got.cached and got.text == text and inner.calls == 0
    assert len(again) == 1


def test_threads_share_one_cache(tmp_path):
    inner = FakeLM(_echo)
    lm = CachedLM(inner, tmp_path / "c.sqlite")
    requests = [chat(f"q{i % 20}") for i in range(200)]
    results: list[str] = []
    lock = threading.Lock()

    def work(chunk):
        for r in chunk:
            text = lm.generate(r).text
            with lock:
                results.append(text)

    threads = [threading.Thread(target=work, args=(requests[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 200 and len(lm) == 20
    assert lm.hits + lm.misses == 200
    assert inner.calls == lm.misses >= 20  # racing threads may both miss; the first row stays


def test_wrong_schema_version_is_refused(tmp_path):
    path = tmp_path / "c.sqlite"
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version=99")
    db.close()
    with pytest.raises(StoreError, match="schema version 99"):
        CachedLM(FakeLM(_echo), path)


_WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {src!r})
    from coalign.lm import CachedLM, LMResponse, chat

    class Big:
        name = "big"
        def generate(self, request):
            text = request.messages[0].content * 20000  # ~100 KB rows: a kill lands mid-write
            return LMResponse(text, 1, 1, "big")
        def close(self):
            pass

    lm = CachedLM(Big(), sys.argv[1])
    i = 0
    while True:
        lm.generate(chat(f"r{{i:05d}}"))
        print(i, flush=True)  # printed only after the row is committed
        i += 1
    """
)


def test_killed_writer_leaves_only_whole_rows(tmp_path):
    path = tmp_path / "c.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER.format(src=str(SRC)), str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        committed = -1
        for line in proc.stdout:
            committed = int(line)
            if committed >= 40:
                break
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
    assert committed >= 40
    db = sqlite3.connect(path)
    rows = db.execute("SELECT request_json, text FROM responses").fetchall()
    db.close()
    assert len(rows) >= committed + 1  # every acknowledged row survived
    for request_json, text in rows:  # and no row is partial
        prompt = json.loads(request_json)["messages"][0][1]
        assert text == prompt * 20000
    inner = FakeLM(_echo, name="big")
    reopened = CachedLM(inner, path)
    assert reopened.generate(chat("r00000")).cached and inner.calls == 0
