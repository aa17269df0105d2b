"""OpenAICompatible survives a faulty endpoint: a real server on 127.0.0.1 fails ~20% of requests
with every fault we know of, and runs through it answer and score exactly as through a healthy one.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from coalign.backends import build_runtime
from coalign.lm import CachedLM, EndpointSettings, LMError, LMRefusal, OpenAICompatible, chat
from coalign.runner import CACHE_NAME, evaluate, load_dataset
from coalign.store import RunStore
from coalign.systems import SYSTEMS, models_of
from tests.endpoint_server import FAULTS, FaultServer, fault_mix

pytestmark = pytest.mark.server

DEADLINE = 0.5  # seconds per attempt: hangs and drips cost this much each
FAST = {"timeout": DEADLINE, "max_retries": 6, "backoff": 0.01, "max_backoff": 0.05}


def faulty(**kw) -> FaultServer:
    """A server failing a deterministic 20% of requests with the whole mix of faults."""
    server = FaultServer(sleep_s=5 * DEADLINE, drip_s=0.02, choose=fault_mix(0.2), **kw)
    server.retry_after = "1"  # capped by max_backoff: the test stays fast
    return server


def answers(url: str, n: int) -> tuple[list[str], OpenAICompatible]:
    lm = OpenAICompatible(url, "m", api_key="k", seed=0, **FAST)
    with ThreadPoolExecutor(4) as pool:  # faults follow the request, not the interleaving
        texts = list(pool.map(lambda i: lm.generate(chat(f"question {i}")).text, range(n)))
    lm.close()
    return texts, lm


def test_faulty_endpoint_answers_exactly_like_a_healthy_one():
    n = 120  # enough requests for every kind of fault to occur (the draw is deterministic)
    with FaultServer() as healthy:
        expected, clean = answers(healthy.url, n)
    with faulty() as server:
        start = time.perf_counter()
        texts, lm = answers(server.url, n)
        elapsed = time.perf_counter() - start
    assert texts == expected
    assert set(server.injected) == set(FAULTS), server.injected
    faults = sum(server.injected.values())
    assert 0.1 < faults / len(server.bodies) < 0.3
    # each fault was noticed, cost exactly one retry, and nothing else was retried
    assert (clean.retries, lm.retries, lm.calls) == (0, faults, n + faults)
    assert elapsed < 30


def test_a_refusal_is_an_error_and_never_cached(tmp_path):
    with FaultServer() as server:
        lm = CachedLM(OpenAICompatible(server.url, "m", api_key="k", **{**FAST,
                                                                       "max_retries": 1}),
                      tmp_path / "cache.sqlite")
        for refusal in ("null", "filter"):
            server.script = [refusal, refusal]
            with pytest.raises(LMRefusal) as err:
                lm.generate(chat(refusal))
            assert "refusal" in str(err.value) and "\n" not in str(err.value)
            assert len(lm) == 0 and lm.inner.retries >= 1
        assert isinstance(err.value, LMError)
        # the server recovers: the same request now gets (and caches) the real answer
        assert lm.generate(chat("null")).text == "echo:null"
        again = lm.generate(chat("null"))
        assert (again.text, again.cached, len(lm)) == ("echo:null", True, 1)
        server.script = ["null"]  # a passing refusal is retried away like any other fault
        assert lm.generate(chat("once")).text == "echo:once"
        lm.close()


def test_a_dripped_body_is_cut_at_the_whole_request_deadline():
    with FaultServer(drip_s=0.05) as server:
        server.script = ["drip"]  # ~250 bytes at 0.05 s each: over 10 s, each read within 0.05 s
        lm = OpenAICompatible(server.url, "m", api_key="k", **{**FAST, "max_retries": 0})
        start = time.perf_counter()
        with pytest.raises(LMError, match=r"failed after 1 attempt \(timeout: "):
            lm.generate(chat("drip"))
        assert time.perf_counter() - start < DEADLINE + 0.5  # the drip alone lasts > 10 s
        # with one concurrency slot: the worker of the cut attempt hands the slot on at once
        lm = OpenAICompatible(server.url, "m", api_key="k", concurrency=1, **FAST)
        server.script = ["drip"]
        start = time.perf_counter()
        assert lm.generate(chat("drip")).text == "echo:drip"
        assert lm.retries == 1 and time.perf_counter() - start < DEADLINE + 1.0


def test_concurrency_caps_requests_in_flight():
    with FaultServer(sleep_s=0.2) as server:
        server.default = "sleep"  # every answer takes 0.2 s, so requests overlap
        lm = OpenAICompatible(server.url, "m", api_key="k", concurrency=2, timeout=5)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: lm.generate(chat(f"c{i}")), range(8)))
    assert server.max_in_flight == 2


# --- end to end: a system evaluated through the endpoint -------------------------------------


def evaluation(url: str, run_dir: Path, n: int = 8, retries: int = 6,
               ) -> tuple[list[float], OpenAICompatible]:
    """multihop_qa on ``n`` world questions, its three LLM components served by ``url`` (the
    backend's own backoff: 0.25-0.5 s, then doubling)."""
    spec = f"openai:m@{url}"
    task = SYSTEMS["multihop_qa"](spec)
    runtime, _ = build_runtime(models_of(task), run_dir / CACHE_NAME, max_workers=2,
                               endpoint=EndpointSettings(timeout_s=DEADLINE, max_retries=retries))
    store = RunStore(run_dir)
    try:
        result = evaluate(task, load_dataset("world", n), task.system.default_config(), runtime,
                          store)
    finally:
        store.close()
    return result.scores, runtime.lms[spec].inner


def test_evaluate_through_a_faulty_endpoint_scores_like_a_healthy_one(tmp_path):
    with FaultServer() as healthy:
        expected, _ = evaluation(healthy.url, tmp_path / "healthy", n=16)
    assert len(set(expected)) > 1  # the echo answers score differently: a real comparison
    with faulty() as server:
        scores, lm = evaluation(server.url, tmp_path / "faulty", n=16)
    assert scores == expected
    assert lm.retries == sum(server.injected.values()) > 0
    assert (lm.timeout, lm.max_retries) == (DEADLINE, 6)  # the settings reached the backend


def test_cli_evaluate_through_a_faulty_endpoint(tmp_path):
    with FaultServer() as healthy:
        expected, _ = evaluation(healthy.url, tmp_path / "healthy")
    with faulty() as server:
        out = tmp_path / "out.json"
        proc = subprocess.run(
            [sys.executable, "-m", "coalign", "evaluate", "multihop_qa", "--model",
             f"openai:m@{server.url}", "--limit", "8", "--run-dir", str(tmp_path / "cli"),
             "--timeout", str(DEADLINE), "--retries", "6", "--concurrency", "2",
             "--json", str(out)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    assert list(json.loads(out.read_text())["scores"].values()) == expected
    assert server.injected and server.max_in_flight <= 2


def test_a_refusal_ends_the_run_naming_the_example_and_is_not_stored(tmp_path):
    examples = load_dataset("world", 4)
    refused = examples[2].inputs["question"]

    def choose(body: dict, seen: int) -> str:
        return "null" if refused in body["messages"][-1]["content"] else "ok"

    with FaultServer(choose=choose) as server:
        with pytest.raises(LMRefusal, match=rf"on '{examples[2].id}': openai endpoint .*refusal"):
            evaluation(server.url, tmp_path, n=4, retries=1)
    with sqlite3.connect(tmp_path / CACHE_NAME) as db:
        texts = [t for (t,) in db.execute("SELECT text FROM responses")]
    assert texts and "" not in texts and not any(refused in t for t in texts)


def optimization(url: str, run_dir: Path) -> tuple[list, list[float], int]:
    """A small coalign optimization of multihop_qa with every LLM call served by ``url``: its
    ledger (decisions and scores, without timings), test scores and the backend's retries."""
    from coalign.job import Job, parse_run_config

    cfg = parse_run_config({
        "system": "multihop_qa", "data": "world", "model": f"openai:m@{url}",
        "split": {"train": 3, "val": 4, "test": 3, "seed": 0},
        "components": ["answer_generator"], "workers": 2,
        "endpoint": {"timeout_s": 2.0, "max_retries": 8},  # room for a loaded machine
        "budget": {"iterations": 2, "search_size": 2, "fresh_inputs": 1, "rollout_n": 2,
                   "text_candidates": 2, "text_steps": 1, "text_alternatives": 2}})
    job = Job.open(cfg, run_dir)
    try:
        job.optimizer.run()
        _, after = job.evaluate_test()
        ledger = [(t, state, {k: v for k, v in rec.items() if k not in ("seconds", "account")})
                  for t, state, rec in job.store.steps()]
        lm = job.optimizer.runtime.lms[cfg.model].inner
        return ledger, after.scores, lm.retries
    finally:
        job.store.close()


def echo_all(body: dict) -> str:  # the whole prompt: scores then differ by instruction
    return "echo: " + " ".join(m["content"] for m in body["messages"])


@pytest.mark.slow
def test_optimizations_through_three_fault_mixes_end_like_the_healthy_one(tmp_path):
    with FaultServer() as healthy:
        healthy.reply = echo_all
        expected = optimization(healthy.url, tmp_path / "healthy")
    assert expected[0]
    for salt in ("a", "b", "c"):
        server = FaultServer(sleep_s=3.0, drip_s=0.05, choose=fault_mix(0.2, salt=salt))
        server.retry_after = "1"
        with server:
            server.reply = echo_all
            ledger, scores, retries = optimization(server.url, tmp_path / salt)
        assert (ledger, scores) == expected[:2]
        # every injected fault cost one retry (a slow machine may add a timeout of its own)
        assert retries >= sum(server.injected.values()) > 0
