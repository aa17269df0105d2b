"""Usage meter and price table arithmetic."""

from __future__ import annotations

import json
import threading

import pytest

from coalign.errors import ConfigError
from coalign.lm import CachedLM, LMResponse, MeteredLM, Price, PriceTable, UsageMeter, chat
from tests.fakes import FakeLM


def _resp(model="gpt-x", prompt=1000, completion=200, cached=False, local=False, latency=0.5):
    extra = {"local": True} if local else {}
    return LMResponse("t", prompt, completion, model, cached, latency, extra=extra)


def test_price_arithmetic():
    assert Price(0.15, 0.60).cost(1_000_000, 0) == pytest.approx(0.15)
    assert Price(0.15, 0.60).cost(2000, 500) == pytest.approx((2000 * 0.15 + 500 * 0.60) / 1e6)


def test_price_table_lookup_local_unknown_and_strict():
    table = PriceTable({"gpt-x": {"prompt": 2.0, "completion": 8.0}})
    assert table.cost(_resp()) == pytest.approx(1000 * 2e-6 + 200 * 8e-6)
    assert table.cost(_resp(model="qwen2.5-0.5b")) == 0.0  # bundled local model
    assert table.cost(_resp(model="mine", local=True)) == 0.0  # any local GGUF
    assert table.cost(_resp(model="unknown")) == 0.0  # lenient by default
    strict = PriceTable({"gpt-x": Price(2.0, 8.0)}, strict=True)
    with pytest.raises(ConfigError, match=r"no price for model 'unknown' \(known: gpt-x\)"):
        strict.cost(_resp(model="unknown"))
    assert strict.cost(_resp(model="x", local=True)) == 0.0  # local stays free when strict


def test_local_price_is_configurable():
    table = PriceTable({"smollm2-135m": Price(0.01, 0.02)}, local=Price(1.0, 1.0))
    assert table.cost(_resp(model="smollm2-135m", local=True)) == pytest.approx(
        (1000 * 0.01 + 200 * 0.02) / 1e6
    )
    assert table.cost(_resp(model="qwen2.5-0.5b", local=True)) == pytest.approx(1200 / 1e6)


def test_price_table_rejects_bad_keys():
    with pytest.raises(ConfigError, match="unknown keys \\['input'\\]"):
        PriceTable({"m": {"input": 1.0}})


def test_meter_totals_per_tag_and_cache_hits_are_not_billed():
    meter = UsageMeter(PriceTable({"gpt-x": Price(1.0, 2.0)}))
    meter.record("retrieve", _resp(prompt=100, completion=10))
    meter.record("retrieve", _resp(prompt=300, completion=30, latency=1.5))
    meter.record("retrieve", _resp(prompt=300, completion=30, cached=True))
    meter.record("answer", _resp(model="qwen2.5-0.5b", prompt=50, completion=5, local=True))
    meter.record_error("answer")
    r = meter.usage("retrieve")
    assert (r.calls, r.cache_hits, r.errors, r.prompt_tokens, r.completion_tokens) == (
        3,
        1,
        0,
        400,
        40,
    )
    assert r.cost_usd == pytest.approx((400 * 1.0 + 40 * 2.0) / 1e6)
    assert r.latency_s == pytest.approx(2.0)
    a = meter.usage("answer")
    assert (a.calls, a.errors, a.prompt_tokens, a.cost_usd) == (2, 1, 50, 0.0)
    total = meter.total()
    assert (total.calls, total.prompt_tokens) == (5, 450)
    assert meter.usage("never").calls == 0


def test_snapshot_is_json_and_merge_adds():
    meter = UsageMeter(PriceTable({"gpt-x": Price(1.0, 2.0)}))
    meter.record("a", _resp())
    snap = json.loads(json.dumps(meter.snapshot()))
    other = UsageMeter()
    other.record("a", _resp(model="free", prompt=10, completion=1))
    other.merge(snap)
    other.merge(snap)
    a = other.usage("a")
    assert (a.calls, a.prompt_tokens, a.completion_tokens) == (3, 2010, 401)
    assert a.cost_usd == pytest.approx(2 * (1000 + 400) / 1e6)
    with pytest.raises(ConfigError, match="unknown fields"):
        other.merge({"a": {"callz": 1}})


def test_metered_lm_attributes_calls_and_errors():
    meter = UsageMeter()
    inner = FakeLM(lambda r: "one two")
    lm = meter.lm(inner, "reader")
    assert isinstance(lm, MeteredLM) and lm.name == "fake"
    lm.generate(chat("a b c"))

    def boom(request):
        raise RuntimeError("down")

    bad = MeteredLM(FakeLM(boom), meter, "reader")
    with pytest.raises(RuntimeError):
        bad.generate(chat("x"))
    u = meter.usage("reader")
    assert (u.calls, u.errors, u.prompt_tokens, u.completion_tokens) == (2, 1, 3, 2)


def test_metered_cache_counts_hits(tmp_path):
    meter = UsageMeter()
    lm = meter.lm(CachedLM(FakeLM(lambda r: "x"), tmp_path / "c.sqlite"), "judge")
    for _ in range(3):
        lm.generate(chat("same"))
    u = meter.usage("judge")
    assert (u.calls, u.cache_hits, u.prompt_tokens) == (3, 2, 1)


def test_meter_is_thread_safe():
    meter = UsageMeter(PriceTable({"gpt-x": Price(1.0, 1.0)}))

    def work():
        for _ in range(500):
            meter.record("t", _resp(prompt=3, completion=1))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    u = meter.usage("t")
    assert (u.calls, u.prompt_tokens, u.completion_tokens) == (4000, 12000, 4000)
    assert u.cost_usd == pytest.approx(16000 / 1e6)
