"""One writer per run dir: a second writer is refused in one line, a killed writer's lock is gone,
readers need no lock and work on read-only media."""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from coalign.errors import StoreError
from coalign.store import RunStore
from tests._store_writer import make_pair, write_forever


def test_second_writer_in_process_is_refused_until_the_first_closes(tmp_path):
    first = RunStore(tmp_path)
    with pytest.raises(StoreError, match="in use by another coalign process") as info:
        RunStore(tmp_path)
    assert f"pid {os.getpid()}" in str(info.value) and "\n" not in str(info.value)
    first.close()
    RunStore(tmp_path).close()


def test_dropped_store_releases_its_lock(tmp_path):
    RunStore(tmp_path).put_pairs([make_pair(0)])  # never closed: collected at once
    with RunStore(tmp_path) as store:
        assert len(store.pairs()) == 1


def test_writer_process_blocks_a_second_writer_and_kill_9_frees_the_dir(tmp_path):
    RunStore(tmp_path).close()
    proc = mp.get_context("spawn").Process(target=write_forever, args=(tmp_path,))
    proc.start()
    try:
        deadline = time.time() + 60
        with RunStore(tmp_path, readonly=True) as reader:  # a reader beside the writer
            while time.time() < deadline and len(reader.pairs()) < 5:
                time.sleep(0.05)
            assert len(reader.pairs()) >= 5
        with pytest.raises(StoreError, match=f"pid {proc.pid}"):
            RunStore(tmp_path)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
    with RunStore(tmp_path) as store:  # resume after kill -9: no stale lock
        store.put_pairs([make_pair(10_000)])


def test_cli_writer_refused_while_a_run_holds_the_dir(tmp_path):
    with RunStore(tmp_path):
        proc = subprocess.run([sys.executable, "-m", "coalign", "evaluate", "multihop_qa",
                               "--data", "world", "--limit", "2", "--run-dir", str(tmp_path)],
                              capture_output=True, text=True, timeout=300)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: run dir") and "in use" in lines[0]


def test_run_dir_that_is_a_file(tmp_path):
    target = tmp_path / "run"
    target.write_text("not a dir")
    with pytest.raises(StoreError, match="is a file"):
        RunStore(target)
    with pytest.raises(StoreError, match="no run store"):
        RunStore(tmp_path / "absent", readonly=True)


def test_readonly_store_refuses_writes_and_foreign_files(tmp_path):
    with RunStore(tmp_path) as store:
        store.set_meta("k", 1)
    with RunStore(tmp_path, readonly=True) as reader:
        assert reader.get_meta("k") == 1
        with pytest.raises(Exception, match="readonly"):
            reader.set_meta("k", 2)
    other = tmp_path / "other"
    other.mkdir()
    (other / "run.sqlite").write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(StoreError, match="run.sqlite"):
        RunStore(other, readonly=True)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_reader_on_read_only_media(tmp_path):
    with RunStore(tmp_path) as store:
        store.put_pairs([make_pair(i) for i in range(3)])
    script = ("from coalign.store import RunStore\n"
              f"print(len(RunStore({str(tmp_path)!r}, readonly=True).pairs()))")
    # a read-only bind mount of the run dir in a private mount namespace
    cmd = (f"mount --bind {tmp_path} {tmp_path} && mount -o remount,bind,ro {tmp_path} && "
           f"touch {tmp_path}/probe 2>/dev/null && echo writable; "
           f"{sys.executable} -c \"$SCRIPT\"")
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("user and mount namespaces are not available here")
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", cmd],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SCRIPT": script})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3"]  # not writable, and the pairs read back


def test_paths_read_from_the_store_stay_inside_the_run_dir(tmp_path):
    with RunStore(tmp_path / "run") as store:
        assert store.inside("lrf/step3") == (tmp_path / "run" / "lrf" / "step3").resolve()
        for bad in ("../elsewhere", "/etc/passwd", "lrf/../../x"):
            with pytest.raises(StoreError, match="outside its run dir"):
                store.inside(bad)
