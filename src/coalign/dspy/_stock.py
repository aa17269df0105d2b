"""A user's own ``dspy.LM`` (or any ``dspy.BaseLM``) serving a program that coalign optimizes.

The loop must see every call of the program's LM: rollouts ask for seeded samples and the ledger
counts calls, tokens and time per predictor step. So a stock LM is wrapped twice, thinly: the
predictors call a :class:`~coalign.dspy.CoalignLM` (as for a bundled model), whose backend is a
:class:`DSPyBackend` that hands each request to the user's LM object itself. Its provider
(LiteLLM or DSPy's native engine), DSPy's response cache, retries, callbacks and history all
apply unchanged; coalign adds no cache of its own in front of it.

What the ledger gets from each call:

- tokens: the usage DSPy reports for the call (the provider's own counts) - exact;
- cache hits: a call of a caching ``dspy.LM`` that reports no usage is counted as answered by
  DSPy's cache (that is how DSPy reports a hit); an LM that does not cache is never counted so;
- time: wall seconds around the call (DSPy's own overhead and retries included); a model that
  is not a bundled one costs this time in the ledger's model seconds;
- dollars: DSPy's own cost estimate when it has one (``LMResponse.extra["cost_usd"]``).
"""

from __future__ import annotations

from time import perf_counter
from typing import Any

from coalign.dspy._lm import DEFAULT_MAX_TOKENS, CoalignLM, dspy
from coalign.errors import ConfigError
from coalign.lm import LMRequest, LMResponse

__all__ = ["DSPyBackend", "LMWrappers"]


class DSPyBackend:
    """A coalign LM backend (``generate(LMRequest) -> LMResponse``) over a ``dspy.BaseLM``.

    A greedy request (temperature 0) is sent with the LM's own sampling settings, so it reaches
    the provider and DSPy's cache as the same program's call under ``dspy.Evaluate`` would. A
    rollout sample sets ``temperature`` and ``rollout_id`` (= coalign's ``sample_index``): DSPy
    keys its cache on both, so sample k is drawn once and then repeats from the cache.
    """

    def __init__(self, lm: Any, name: str) -> None:
        self.lm, self._name = lm, name
        self.own_max_tokens = lm.kwargs.get("max_tokens") or lm.kwargs.get("max_completion_tokens")

    @property
    def name(self) -> str:
        return self._name

    def generate(self, request: LMRequest) -> LMResponse:
        kwargs: dict[str, Any] = {}
        if request.temperature > 0:
            kwargs.update(temperature=request.temperature, rollout_id=request.sample_index)
        if request.max_tokens != self.own_max_tokens:
            kwargs["max_tokens"] = request.max_tokens
        if request.stop:
            kwargs["stop"] = list(request.stop)
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        entry = self.lm.history[-1] if self.lm.history else None
        with dspy.track_usage() as tracker:  # rolls up into a tracker the user has open
            t0 = perf_counter()
            outputs = self.lm(messages=messages, **kwargs)
            latency = perf_counter() - t0
        usage = next(iter(tracker.get_total_tokens().values()), {})  # one LM: one entry
        latest = self.lm.history[-1] if self.lm.history else None
        cost = latest.get("cost") if latest is not None and latest is not entry else None
        return LMResponse(_text(outputs), int(usage.get("prompt_tokens") or 0),
                          int(usage.get("completion_tokens") or 0), self.lm.model,
                          cached=not usage and _caches(self.lm), latency_s=latency,
                          extra={} if cost is None else {"cost_usd": cost})

    def close(self) -> None:
        """The LM is the user's: it stays open."""


def _caches(lm: Any) -> bool:
    """Whether DSPy may answer this LM's calls from its cache: a managed ``dspy.LM`` with its
    cache on (DSPy never caches a legacy ``BaseLM.forward`` subclass)."""
    return bool(getattr(lm, "cache", False)) and hasattr(lm, "_engine_spec")


def _text(outputs: Any) -> str:
    if not outputs:
        return ""
    first = outputs[0]
    text = first.get("text") if isinstance(first, dict) else first
    return "" if text is None else str(text)


class LMWrappers:
    """The :class:`CoalignLM` serving each LM object a program uses: a ``CoalignLM`` as itself,
    any other ``dspy.BaseLM`` wrapped once (the same object always gets the same wrapper, and
    two objects never share a coalign model name)."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Any, CoalignLM]] = {}

    def __call__(self, lm: Any, what: str) -> CoalignLM:
        if isinstance(lm, CoalignLM):
            return lm
        if not isinstance(lm, dspy.BaseLM):
            got = "none" if lm is None else type(lm).__name__
            raise ConfigError(f"{what}: coalign.dspy.optimize needs a dspy.LM (or any "
                              f"dspy.BaseLM; got {got}); e.g. dspy.configure(lm=dspy.LM("
                              "'openai/gpt-4o-mini')) or lm=CoalignLM('qwen2.5-0.5b')")
        known = self._by_id.get(id(lm))
        if known is not None:
            return known[1]
        taken = {w.coalign_name for _, w in self._by_id.values()}
        name, n = f"dspy:{lm.model}", 2
        while name in taken:
            name, n = f"dspy:{lm.model}#{n}", n + 1
        backend = DSPyBackend(lm, name)
        wrapper = CoalignLM(backend, max_tokens=backend.own_max_tokens or DEFAULT_MAX_TOKENS)
        self._by_id[id(lm)] = (lm, wrapper)  # holding lm keeps its id from being reused
        return wrapper
