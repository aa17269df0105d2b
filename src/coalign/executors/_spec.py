"""The ``executor`` block of a run config, and the executor it names."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from coalign.executors._base import BaseExecutor, ThreadExecutor
from coalign.lm import EndpointSettings


class ExecutorSpec(BaseModel):
    """``executor: {ray: ADDRESS}`` runs model calls on Ray actors; absent, on threads here.

    Not part of a run's digest: a run may be resumed on another machine or cluster.
    """

    model_config = ConfigDict(extra="forbid")

    ray: str | None = Field(None, min_length=1)  # auto | HOST:6379 | ray://HOST:10001 | local
    workers: int | None = Field(None, ge=1, strict=True)  # actors per model; default: `workers`
    concurrency: int = Field(1, ge=1, strict=True)  # calls in flight per actor (llama.cpp: 1)
    cpus: float = Field(1.0, gt=0)  # CPUs reserved per actor (llama.cpp threads)


def make_executor(spec: ExecutorSpec | None, workers: int,
                  endpoint: EndpointSettings | None = None) -> BaseExecutor:
    """The executor ``spec`` names; ``workers`` is the run's own setting (threads, or actors
    per model when the spec gives none)."""
    if spec is None or spec.ray is None:
        return ThreadExecutor(workers)
    from coalign.executors._ray import RayExecutor  # Ray is an optional extra

    return RayExecutor(spec.ray, spec.workers or workers, concurrency=spec.concurrency,
                       cpus=spec.cpus, endpoint=endpoint)
