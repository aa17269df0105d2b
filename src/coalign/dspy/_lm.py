"""``CoalignLM``: a ``dspy.LM`` answered by a coalign LM backend (and its response cache).

DSPy 3.4 plugs a custom backend in as an *engine* (``complete(Request) -> Response``); this one
turns DSPy's request into coalign's ``LMRequest``. Inside a coalign run of a program the call is
made through the step's ``RunContext``, so rollout sampling applies and usage lands on the
predictor's step; anywhere else (``dspy.Evaluate``, plain calls) the backend answers directly.
Both send the same request for the same prompt, so they share the response cache.
"""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path
from typing import Any

try:
    import dspy
    from dspy.lm15 import Response, response_to_events
    from dspy.utils.exceptions import AdapterParseError
except ImportError as exc:  # the bench extra is optional
    raise ImportError("coalign.dspy needs DSPy: pip install 'coalign[bench]'") from exc

from coalign.lm import LM, LMRequest, make_lm
from coalign.optimize import engine_response, request_messages
from coalign.runtime import RunContext

__all__ = ["ACTIVE_STEP", "AdapterParseError", "CoalignLM", "dspy"]

DEFAULT_MAX_TOKENS = 256  # DSPy leaves it unset; a local model must not ramble to n_ctx

# The predictor step in progress (set by the tracer around a predictor call, read by the engine).
ACTIVE_STEP: ContextVar[RunContext | None] = ContextVar("coalign_dspy_step", default=None)


class _Engine:
    """Serves DSPy's requests from one coalign backend, known to runtimes as ``name``."""

    def __init__(self, name: str, backend: LM, max_tokens: int) -> None:
        self.name, self.backend, self.max_tokens = name, backend, max_tokens

    def complete(self, request: Any) -> Response:
        msgs = request_messages(request)
        cfg = request.config
        lm_request = LMRequest(tuple(msgs), temperature=cfg.temperature or 0.0,
                               max_tokens=cfg.max_tokens or self.max_tokens,
                               stop=tuple(cfg.stop or ()))
        ctx = ACTIVE_STEP.get()
        out = (ctx.generate(self.name, lm_request) if ctx is not None
               else self.backend.generate(lm_request))
        return engine_response(out)

    def stream(self, request: Any) -> Any:
        return response_to_events(self.complete(request))


class CoalignLM(dspy.LM):
    """A ``dspy.LM`` over a coalign backend: ``CoalignLM("qwen2.5-0.5b", cache="lm.sqlite")``.

    ``model`` is a model name or spec (``llamacpp:smollm2-135m``, ``openai:gpt-4o-mini@URL``)
    or a coalign ``LM`` object; ``cache`` wraps a named model in coalign's SQLite response cache.
    DSPy's own cache and retries are off: coalign's serve every call. ``coalign.dspy.optimize``
    also takes any other ``dspy.LM``, wrapping it in one of these (``_stock``).
    """

    def __init__(self, model: str | LM = "qwen2.5-0.5b", *, cache: str | Path | None = None,
                 max_tokens: int = DEFAULT_MAX_TOKENS, name: str | None = None,
                 **kwargs: Any) -> None:
        if isinstance(model, str):
            spec = model if ":" in model else f"llamacpp:{model}"
            backend, label = make_lm(spec, cache=cache), name or model
        else:
            backend, label = model, name or model.name
        kwargs.setdefault("cache", False)
        kwargs.setdefault("num_retries", 0)
        super().__init__(f"coalign/{label}", engine=_Engine(label, backend, max_tokens),
                         max_tokens=max_tokens, **kwargs)

    @property
    def engine(self) -> _Engine:
        return self._engine_spec

    @property
    def coalign_name(self) -> str:
        """The model's name in a coalign ``Runtime``."""
        return self.engine.name

    @property
    def backend(self) -> LM:
        return self.engine.backend
