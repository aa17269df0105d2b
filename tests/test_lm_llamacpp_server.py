"""OpenAICompatible against llama-cpp-python's own OpenAI server on the bundled SmolLM2."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest

from coalign.lm import LlamaCpp, ModelPool, ModelResolver, OpenAICompatible, chat

pytestmark = [pytest.mark.server, pytest.mark.llm]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory) -> Iterator[str]:
    for extra in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context"):
        pytest.importorskip(extra, reason="needs pip install 'llama-cpp-python[server]'")
    model = ModelResolver().resolve("smollm2-135m").path
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "512",
    ]
    # The server logs a lot: a file, not a pipe, so a full pipe buffer cannot stall it.
    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not answer within 120 s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        log.close()


def test_real_chat_completion_matches_the_embedded_backend(llama_server):
    """One real completion over HTTP; at temperature 0 it equals the in-process answer.

    This must be the server's first request: llama.cpp's server reuses the KV cache of the
    previous prompt, and a re-evaluated suffix can shift logits enough to change later answers
    (the embedded backend resets per call for that reason).
    """
    request = chat("Say hello in one word.", max_tokens=8)
    lm = OpenAICompatible(llama_server, "smollm2", timeout=60, max_retries=1)
    out = lm.generate(request)
    lm.close()
    assert out.text.strip() and out.prompt_tokens > 5 and 0 < out.completion_tokens <= 8
    assert out.extra["served_model"] == "smollm2" and (lm.calls, lm.retries) == (1, 0)
    pool = ModelPool()
    try:
        local = LlamaCpp("smollm2-135m", n_ctx=512, pool=pool).generate(request)
    finally:
        pool.clear()
    assert (local.text, local.prompt_tokens, local.completion_tokens) == (
        out.text,
        out.prompt_tokens,
        out.completion_tokens,
    )
