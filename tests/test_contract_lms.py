"""``coalign.testing``'s LM contract over every backend and wrapper: llama.cpp with the bundled
SmolLM2 (marked ``llm``), the OpenAI-compatible client against the real fault-injecting HTTP
server of ``tests/endpoint_server.py``, the response cache and the usage meter over that client,
and the replay table (recorded from that client, then read back from its shard)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from coalign.lm import CachedLM, LlamaCpp, ModelPool, OpenAICompatible, UsageMeter, chat
from coalign.tables._replay import RecordingLM, ReplayLM
from coalign.tables._shards import ShardSet
from coalign.testing.pytest_lms import REQUESTS, LMCase, LMContract
from tests.endpoint_server import FaultServer

TOO_LONG = chat("word " * 800, max_tokens=4)  # past SmolLM2's n_ctx of 512


@pytest.fixture(scope="module")
def pool() -> Iterator[ModelPool]:
    pool = ModelPool()
    yield pool
    pool.clear()


def _client(server: FaultServer) -> OpenAICompatible:
    return OpenAICompatible(server.url, "m1", api_key="k", timeout=5.0, max_retries=1,
                            backoff=0.01, sleep=lambda s: None, seed=0)


def _refused(server: FaultServer):
    def failing():
        server.script = ["400"]  # a 4xx other than 429 fails at once
        return chat("refused")
    return failing


def _replay(server: FaultServer, folder) -> ReplayLM:
    shards = ShardSet(folder, "contract", "space", writer=True)
    recorder = RecordingLM(shards, _client(server), "m1")
    for request in REQUESTS:
        recorder.generate(request)
    shards.seal()
    return ReplayLM(ShardSet(folder, "contract", "space"), "m1")


BACKENDS = [pytest.param("llamacpp", marks=pytest.mark.llm),
            *(pytest.param(name, marks=pytest.mark.server)
              for name in ("openai", "cached", "metered", "replay"))]


class TestLMBackends(LMContract):
    @pytest.fixture(params=BACKENDS)
    def case(self, request, tmp_path) -> Iterator[LMCase]:
        name = request.param
        if name == "llamacpp":
            pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed")
            lm = LlamaCpp("smollm2-135m", n_ctx=512, pool=request.getfixturevalue("pool"))
            yield LMCase(name, lm, lambda: TOO_LONG)
            lm.close()
            return
        with FaultServer() as server:
            if name == "replay":
                yield LMCase(name, _replay(server, tmp_path / "table"),
                             lambda: chat("Not in the table."))
                return
            lm = {"openai": lambda: _client(server),
                  "cached": lambda: CachedLM(_client(server), tmp_path / "cache.sqlite"),
                  "metered": lambda: UsageMeter().lm(_client(server), "contract")}[name]()
            yield LMCase(name, lm, _refused(server))
            lm.close()
