"""Defaults an installed wheel relies on: the data folder and ``coalign --version``."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from coalign.data import _io


def test_data_dir_prefers_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("COALIGN_DATA_DIR", str(tmp_path / "mine"))
    assert _io.data_dir() == tmp_path / "mine"


def test_data_dir_uses_the_checkout_when_it_has_shared_data(monkeypatch):
    monkeypatch.delenv("COALIGN_DATA_DIR", raising=False)
    checkout = (Path(_io.__file__).resolve().parents[3] / ".." / "shared" / "data").resolve()
    if checkout.is_dir():
        assert _io.data_dir() == checkout


def test_data_dir_outside_a_checkout_is_a_user_cache_folder(tmp_path, monkeypatch):
    # an installed wheel: this module's grandparents hold no shared/data
    fake = tmp_path / "site-packages" / "coalign" / "data" / "_io.py"
    monkeypatch.setattr(_io, "__file__", str(fake))
    monkeypatch.delenv("COALIGN_DATA_DIR", raising=False)
    monkeypatch.delenv("COALIGN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _io.data_dir() == tmp_path / "xdg" / "coalign" / "data"
    monkeypatch.setenv("COALIGN_CACHE_DIR", str(tmp_path / "cc"))
    assert _io.data_dir() == tmp_path / "cc" / "data"


def test_version_flag_prints_the_installed_version():
    out = subprocess.run([sys.executable, "-m", "coalign", "--version"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"coalign {version('coalign')}"


def test_a_local_model_without_llama_cpp_names_the_extra(monkeypatch):
    import pytest

    from coalign.lm._base import LMError
    from coalign.lm._llamacpp import _load_llama

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # an endpoint-only install
    with pytest.raises(LMError, match=r"pip install 'coalign\[local\]'"):
        _load_llama("model.gguf", 512, 1)
