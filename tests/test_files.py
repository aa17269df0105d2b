"""coalign.files: whole-or-nothing writes used by every module that leaves a file behind."""

from __future__ import annotations

import os
import stat

import pytest

from coalign.files import replacing, replacing_dir, write_atomic


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_write_atomic_writes_text_bytes_and_chunks_readable_by_others(tmp_path):
    assert write_atomic(tmp_path / "a.txt", "héllo") == 1
    assert write_atomic(tmp_path / "b.bin", b"\x00\x01") == 1
    assert write_atomic(tmp_path / "c.jsonl", (f"{i}\n" for i in range(3))) == 3
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "héllo"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "c.jsonl").read_text() == "0\n1\n2\n"
    assert stat.S_IMODE(os.stat(tmp_path / "a.txt").st_mode) == 0o644
    assert _leftovers(tmp_path) == []


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "state.json"
    write_atomic(target, "old")

    def chunks():
        yield "new, half"
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomic(target, chunks())
    assert target.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_replacing_renames_only_on_a_clean_exit(tmp_path):
    target = tmp_path / "model.bin"
    with replacing(target) as tmp:
        assert tmp.parent == tmp_path and not target.exists()
        tmp.write_bytes(b"weights")
    assert target.read_bytes() == b"weights"
    with pytest.raises(ValueError):
        with replacing(target) as tmp:
            tmp.write_bytes(b"bad")
            raise ValueError("checksum")
    assert target.read_bytes() == b"weights"
    assert _leftovers(tmp_path) == []


def test_a_missing_folder_is_an_oserror_naming_nothing_half_written(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "nope" / "x.txt", "x")
    assert list(tmp_path.iterdir()) == []


def test_replacing_dir_fills_a_folder_whole_and_overwrites_only_when_asked(tmp_path):
    dst = tmp_path / "lrf"
    with replacing_dir(dst) as tmp:
        (tmp / "w").write_text("1")
    assert (dst / "w").read_text() == "1"
    assert stat.S_IMODE(os.stat(dst).st_mode) == 0o755
    with pytest.raises(OSError):  # an existing, non-empty folder is kept without overwrite
        with replacing_dir(dst) as tmp:
            (tmp / "w").write_text("2")
    assert (dst / "w").read_text() == "1"
    with replacing_dir(dst, overwrite=True) as tmp:
        (tmp / "w").write_text("3")
    assert (dst / "w").read_text() == "3"
    with pytest.raises(RuntimeError):
        with replacing_dir(dst, overwrite=True) as tmp:
            raise RuntimeError("killed halfway")
    assert (dst / "w").read_text() == "3"
    assert _leftovers(tmp_path) == []
