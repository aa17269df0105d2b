"""Which LM answers each model name of a run: cached live backends, or a replay table.

Kept apart from ``runner`` (which evaluates) so that the replay library, which evaluates to
build its tables, and the runtime that reads them do not import each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from coalign.errors import ConfigError
from coalign.executors import BaseExecutor
from coalign.lm import CachedLM, EndpointSettings, UsageMeter, make_lm
from coalign.runtime import Runtime
from coalign.tables import REPLAY, replay_runtime

__all__ = ["REPLAY", "build_runtime"]


def build_runtime(models: Sequence[str], cache_path: str | Path | None, *,
                  max_workers: int = 2, seed: int = 0,
                  lm: str | None = None, endpoint: EndpointSettings | None = None,
                  executor: BaseExecutor | None = None) -> tuple[Runtime, UsageMeter]:
    """A runtime whose model names map to cached local (or endpoint) LMs, plus its usage meter.

    ``models`` are short names (``qwen2.5-0.5b``) or full specs (``openai:gpt-4o-mini@URL``);
    ``endpoint`` sets the timeout, retries and concurrency of the endpoint ones.
    ``lm="replay:DIR"`` answers every model from the replay table in DIR instead (no LLM call,
    no response cache: the table is the cache). ``executor`` builds the live backends (Ray
    actors, say) and fans items out; the response cache stays here, in front of them.
    """
    if lm is not None and lm.startswith(REPLAY):
        meter = UsageMeter()
        # replay answers in microseconds from here: nothing to send to actors
        return replay_runtime(lm, models, sink=meter, max_workers=max_workers,
                              seed=seed), meter
    if lm is not None:
        raise ConfigError(f"lm {lm!r}: expected replay:DIR (a replay table directory); live "
                          "models are named by the system")
    lms = {}
    for name in models:
        spec = name if ":" in name else f"llamacpp:{name}"
        inner = (executor.lm(spec, endpoint) if executor is not None
                 else make_lm(spec, endpoint=endpoint))
        lms[name] = CachedLM(inner, cache_path) if cache_path is not None else inner
    meter = UsageMeter()
    if executor is not None:
        max_workers = executor.workers
    return Runtime(lms=lms, sink=meter, max_workers=max_workers, seed=seed,
                   executor=executor), meter
