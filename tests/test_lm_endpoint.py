"""Endpoint settings from run configs and the CLI; keys in endpoint URLs kept out of names, errors,
caches and run dirs."""

from __future__ import annotations

from pathlib import Path

import pytest

from coalign.errors import ConfigError
from coalign.job import Job, parse_run_config, resume_config
from coalign.lm import (
    EndpointSettings,
    LlamaCpp,
    LMError,
    OpenAICompatible,
    chat,
    make_lm,
    redact_url,
)
from tests.endpoint_server import FaultServer
from tests.test_cli_core import one_line_error, run_cli
from tests.test_lm_faults import evaluation

KEY = "SECRETKEY42"


def test_settings_reach_remote_backends_only():
    settings = EndpointSettings(timeout_s=7, max_retries=1, concurrency=3)
    remote = make_lm("openai:m@http://127.0.0.1:9/v1", endpoint=settings)
    assert isinstance(remote, OpenAICompatible)
    assert (remote.timeout, remote.max_retries, remote.concurrency) == (7, 1, 3)
    assert isinstance(make_lm("llamacpp:smollm2-135m", endpoint=settings), LlamaCpp)
    default = make_lm("openai:m@http://127.0.0.1:9/v1", endpoint=EndpointSettings())
    assert (default.timeout, default.max_retries, default.concurrency) == (60.0, 4, None)


@pytest.mark.parametrize("raw,match", [
    ({"timeout_s": 0}, "timeout_s must be a number of seconds > 0"),
    ({"timeout_s": float("inf")}, "timeout_s must be"),
    ({"max_retries": -1}, "max_retries must be >= 0"),
    ({"concurrency": 0}, "concurrency must be >= 1"),
    ({"retries": 2}, "field 'endpoint.retries'"),
])
def test_bad_endpoint_blocks_are_one_line_errors(raw, match):
    with pytest.raises(ConfigError, match=match) as err:
        parse_run_config({"endpoint": raw})
    assert "\n" not in str(err.value) and "endpoint" in str(err.value)


def test_endpoint_block_leaves_the_digest_alone():
    # operational, not part of what is optimized: a resumed run may change it
    plain = parse_run_config({})
    tuned = parse_run_config({"endpoint": {"timeout_s": 5, "max_retries": 2, "concurrency": 4}})
    assert tuned.endpoint == EndpointSettings(5.0, 2, 4) and tuned.digest == plain.digest


def test_cli_rejects_bad_endpoint_options(tmp_path):
    err = one_line_error(run_cli("evaluate", "multihop_qa", "--timeout", "0",
                                 "--run-dir", str(tmp_path)))
    assert "timeout_s must be" in err


def test_redact_url_drops_userinfo_only():
    assert redact_url(f"http://alice:{KEY}@host:8000/v1") == "http://host:8000/v1"
    assert redact_url(f"openai:m@https://:{KEY}@host/v1") == "openai:m@https://host/v1"
    assert redact_url("openai:m@http://host/v1?x=a@b") == "openai:m@http://host/v1?x=a@b"


def _keyed(url: str) -> str:
    return url.replace("http://", f"http://alice:{KEY}@")


def _leaks(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


@pytest.mark.server
def test_a_key_in_the_url_is_sent_but_never_shown_or_stored(tmp_path):
    with FaultServer() as server:
        lm = OpenAICompatible(_keyed(server.url), "m", api_key="k")
        assert lm.generate(chat("hi")).text == "echo:hi"
        assert server.auth[-1].startswith("Basic ")  # the userinfo still authenticates
        assert KEY not in lm.name and KEY not in lm.base_url and lm.base_url == server.url
        server.script = ["400"]
        with pytest.raises(LMError) as err:
            lm.generate(chat("bad"))
        assert KEY not in str(err.value) and server.url in str(err.value)
        evaluation(_keyed(server.url), tmp_path / "eval", n=2)  # run store + response cache
    assert (tmp_path / "eval" / "lm_cache.sqlite").exists() and _leaks(tmp_path / "eval") == []


def test_a_key_in_the_model_url_stays_out_of_an_optimize_run_dir(tmp_path):
    url = f"http://alice:{KEY}@127.0.0.1:9/v1"
    cfg = parse_run_config({"model": f"openai:m@{url}", "split": {"train": 1, "val": 1,
                                                                  "test": 1},
                            "endpoint": {"timeout_s": 3}})
    job = Job.open(cfg, tmp_path / "run")
    lm = job.optimizer.runtime.lms[cfg.model].inner
    assert lm.timeout == 3 and KEY not in lm.name
    job.store.close()
    assert _leaks(tmp_path / "run") == []
    stored = resume_config(tmp_path / "run")  # without the key, yet the same run
    assert stored.model == "openai:m@http://127.0.0.1:9/v1" and stored.digest == cfg.digest
    Job.open(stored, tmp_path / "run").store.close()
