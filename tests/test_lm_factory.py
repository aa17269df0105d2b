"""Spec strings, make_lm and the package's exports."""

from __future__ import annotations

import os

import pytest

import coalign.lm as lm_pkg
from coalign.errors import ConfigError
from coalign.lm import CachedLM, LlamaCpp, LMSpec, OpenAICompatible, make_lm, parse_spec
from coalign.lm._llamacpp import default_threads


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("llamacpp", LMSpec("llamacpp", "qwen2.5-0.5b")),
        ("llamacpp:smollm2-135m", LMSpec("llamacpp", "smollm2-135m")),
        ("llamacpp:/models/x.gguf", LMSpec("llamacpp", "/models/x.gguf")),
        (
            "openai:gpt-4o-mini@https://api.openai.com/v1",
            LMSpec("openai", "gpt-4o-mini", "https://api.openai.com/v1"),
        ),
        (
            "openai:Qwen/Qwen2.5-7B@http://127.0.0.1:8000/v1",
            LMSpec("openai", "Qwen/Qwen2.5-7B", "http://127.0.0.1:8000/v1"),
        ),
        ("OpenAI:gpt-4o", LMSpec("openai", "gpt-4o", None)),
    ],
)
def test_parse_spec(spec, expected, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert parse_spec(spec) == expected


def test_openai_base_url_from_env(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    assert parse_spec("openai:llama3").base_url == "http://localhost:11434/v1"


@pytest.mark.parametrize("spec", ["vllm:x", "gguf", "", "http://x"])
def test_unknown_scheme_lists_valid_ones(spec):
    with pytest.raises(ConfigError) as err:
        parse_spec(spec)
    msg = str(err.value)
    assert "valid backends: llamacpp, openai" in msg and "\n" not in msg


def test_openai_needs_a_model():
    with pytest.raises(ConfigError, match="missing model id"):
        parse_spec("openai:")


def test_make_lm_builds_backends_without_loading(tmp_path):
    local = make_lm("llamacpp:smollm2-135m", n_ctx=512)
    assert isinstance(local, LlamaCpp) and local.n_ctx == 512
    assert local.name == "llamacpp:smollm2-135m"
    remote = make_lm("openai:m@http://127.0.0.1:9/v1/", max_retries=1)
    assert isinstance(remote, OpenAICompatible)
    assert remote.name == "openai:m@http://127.0.0.1:9/v1" and remote.max_retries == 1
    cached = make_lm("llamacpp:smollm2-135m", cache=tmp_path / "c.sqlite")
    assert isinstance(cached, CachedLM) and cached.name == "llamacpp:smollm2-135m"
    cached.close()


def test_sampling_settings_change_the_backend_name():
    assert LlamaCpp("smollm2-135m", top_p=0.9).name == "llamacpp:smollm2-135m[top_p=0.9]"


def test_make_lm_rejects_unknown_options():
    with pytest.raises(ConfigError, match="bad backend option"):
        make_lm("llamacpp:smollm2-135m", temprature=0.3)


def test_all_is_complete():
    public = {n for n in dir(lm_pkg) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(lm_pkg, n)).__name__ == "module"}
    assert set(lm_pkg.__all__) == public - modules


def test_thread_count_env(monkeypatch):
    monkeypatch.setenv("COALIGN_LM_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.setenv("COALIGN_LM_THREADS", "zero")
    with pytest.raises(ConfigError, match="COALIGN_LM_THREADS: expected a positive integer"):
        default_threads()
    monkeypatch.delenv("COALIGN_LM_THREADS")
    monkeypatch.setattr("os.getloadavg", lambda: (1000.0, 0.0, 0.0))
    assert default_threads() == 1
    monkeypatch.setattr("os.getloadavg", lambda: (0.0, 0.0, 0.0))
    assert default_threads() == (os.cpu_count() or 1)


def test_an_amx_build_is_named_before_it_can_crash():
    from coalign.lm._llamacpp import amx_warning

    native = "CPU : AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | OPENMP = 1 | REPACK = 1 | "
    assert "AMX kernels" in amx_warning(native) and "LLAMA_CMAKE_ARGS" in amx_warning(native)
    portable = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | OPENMP = 1 | "
    assert amx_warning(portable) is None
