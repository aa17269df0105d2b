"""Usage and cost accounting per component.

A :class:`UsageMeter` keeps, per tag (a component name chosen by the caller), the number of calls,
cache hits, failed calls, billed prompt/completion tokens, dollars and seconds. Components get a
:class:`MeteredLM` that attributes their calls to their tag. Cache hits are counted but not billed:
no tokens were spent on them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

from coalign.errors import ConfigError
from coalign.lm._base import LM, LMRequest, LMResponse
from coalign.lm._models import bundled_names

_LOCAL_MODELS = tuple(bundled_names())


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per one million tokens."""

    prompt: float = 0.0
    completion: float = 0.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6


class PriceTable:
    """Prices by model id (``LMResponse.model``, e.g. ``"gpt-4o-mini"``).

    Local models (responses marked ``extra["local"]``, and the bundled model names) cost
    ``local`` unless the table lists them. An unknown remote model costs nothing, or, when
    ``strict``, raises :class:`ConfigError` so a missing price cannot hide spend.

    Args:
        prices: model id -> :class:`Price` or ``{"prompt": $/1M, "completion": $/1M}``.
        local: price applied to local models not listed.
        strict: refuse unknown remote models.
    """

    def __init__(
        self,
        prices: Mapping[str, Price | Mapping[str, float]] | None = None,
        local: Price = Price(),
        strict: bool = False,
    ) -> None:
        self._prices = {name: _as_price(name, p) for name, p in (prices or {}).items()}
        self.local = local
        self.strict = strict

    def price(self, model: str, local: bool = False) -> Price:
        if model in self._prices:
            return self._prices[model]
        if local or model in _LOCAL_MODELS:
            return self.local
        if self.strict:
            known = ", ".join(sorted(self._prices)) or "none"
            raise ConfigError(
                f"price table: no price for model {model!r} (known: {known}); add "
                f"{{'{model}': {{'prompt': $/1M, 'completion': $/1M}}}} or use strict=False"
            )
        return Price()

    def cost(self, response: LMResponse) -> float:
        local = bool(response.extra.get("local", False))
        price = self.price(response.model, local=local)
        return price.cost(response.prompt_tokens, response.completion_tokens)

    def to_dict(self) -> dict[str, dict[str, float]]:
        return {name: asdict(p) for name, p in sorted(self._prices.items())}


def _as_price(name: str, value: Price | Mapping[str, float]) -> Price:
    if isinstance(value, Price):
        return value
    unknown = set(value) - {"prompt", "completion"}
    if unknown:
        raise ConfigError(
            f"price table: model {name!r} has unknown keys {sorted(unknown)}; use 'prompt' "
            "and 'completion' ($ per 1M tokens)"
        )
    return Price(float(value.get("prompt", 0.0)), float(value.get("completion", 0.0)))


@dataclass(slots=True)
class Usage:
    """Totals for one tag. Token and dollar figures count only calls actually served."""

    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0

    def add(self, other: Usage) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


class UsageMeter:
    """Thread-safe usage totals per tag.

    Args:
        prices: how responses are priced (default: everything free, non-strict).
    """

    def __init__(self, prices: PriceTable | None = None) -> None:
        self.prices = prices or PriceTable()
        self._usage: dict[str, Usage] = {}
        self._lock = threading.Lock()

    def record(self, tag: str, response: LMResponse) -> None:
        """Account one response to ``tag`` (a cache hit counts as a call, bills nothing)."""
        if response.cached:
            delta = Usage(calls=1, cache_hits=1)
        else:
            delta = Usage(
                calls=1,
                prompt_tokens=response.prompt_tokens,
                completion_tokens=response.completion_tokens,
                cost_usd=self.prices.cost(response),
                latency_s=response.latency_s,
            )
        self._add(tag, delta)

    def record_error(self, tag: str) -> None:
        self._add(tag, Usage(calls=1, errors=1))

    def _add(self, tag: str, delta: Usage) -> None:
        with self._lock:
            self._usage.setdefault(tag, Usage()).add(delta)

    def usage(self, tag: str) -> Usage:
        """A copy of the totals of ``tag`` (zeros if it never called)."""
        with self._lock:
            return Usage(**asdict(self._usage.get(tag, Usage())))

    def total(self) -> Usage:
        out = Usage()
        with self._lock:
            for usage in self._usage.values():
                out.add(usage)
        return out

    def snapshot(self) -> dict[str, dict[str, float]]:
        """Plain ``{tag: {field: value}}``, ready for JSON."""
        with self._lock:
            return {tag: asdict(u) for tag, u in sorted(self._usage.items())}

    def merge(self, snapshot: Mapping[str, Mapping[str, float]]) -> None:
        """Add a snapshot (e.g. from a worker process or a resumed run) into this meter."""
        names = {f.name for f in fields(Usage)}
        for tag, values in snapshot.items():
            unknown = set(values) - names
            if unknown:
                raise ConfigError(
                    f"usage snapshot: tag {tag!r} has unknown fields {sorted(unknown)}; "
                    f"expected {sorted(names)}"
                )
            self._add(tag, Usage(**values))

    def lm(self, inner: LM, tag: str) -> MeteredLM:
        """``inner`` seen through this meter under ``tag``."""
        return MeteredLM(inner, self, tag)


class MeteredLM:
    """An LM that records each call of ``inner`` in ``meter`` under ``tag``.

    ``close`` does not close ``inner``: several components usually share one backend.
    """

    def __init__(self, inner: LM, meter: UsageMeter, tag: str) -> None:
        self.inner = inner
        self.meter = meter
        self.tag = tag

    @property
    def name(self) -> str:
        return self.inner.name

    def generate(self, request: LMRequest) -> LMResponse:
        try:
            response = self.inner.generate(request)
        except Exception:
            self.meter.record_error(self.tag)
            raise
        self.meter.record(self.tag, response)
        return response

    def close(self) -> None:
        return None
