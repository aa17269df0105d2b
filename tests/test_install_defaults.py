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


_WITHOUT_TORCH = """import sys
sys.modules['torch'] = sys.modules['sentence_transformers'] = None  # an install without them
from coalign.cli import main
sys.argv = ['coalign', *sys.argv[1:]]
main()
"""


def test_without_torch_evaluate_runs_and_optimize_names_the_rewards_extra(tmp_path):
    """An install without the ``rewards`` extra: evaluation (here on the replay fixture) works,
    and a command that needs the local reward models says which extra to add, in one line,
    leaving no run dir."""
    table = Path(__file__).parent / "fixtures" / "tables" / "multihop_qa_8q"

    def coalign(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", _WITHOUT_TORCH, *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)

    done = coalign("evaluate", "multihop_qa", "--data", "hotpotqa", "--lm", f"replay:{table}",
                   "--limit", "2", "--run-dir", str(tmp_path / "eval"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "completion tokens" in done.stdout
    config = tmp_path / "run.yaml"
    config.write_text(f"system: multihop_qa\ndata: hotpotqa\nlm: replay:{table}\n"
                      "split: {train: 2, val: 2, test: 2}\nbudget: {iterations: 1, rollout_n: 0}\n")
    refused = coalign("optimize", str(config), "--run-dir", str(tmp_path / "opt"))
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "error: the local reward models need torch, which is not installed: pip install "
        "'coalign[rewards]' (install torch==2.13.0 first for its CPU build)"]
    assert not (tmp_path / "opt").exists()
