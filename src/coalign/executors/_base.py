"""The executor strategy: how a run fans its items out, and where its model calls execute.

An executor has two duties. ``map(fn, items)`` drives ``fn`` over items concurrently and yields
the results in item order; ``lm(spec, endpoint)`` builds the backend that serves one model.
Whatever the executor, the driver process keeps the response cache and the run store: it wraps
every backend in its ``CachedLM`` and commits each finished item itself, so they stay the single
writer and the single source of truth.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from coalign.errors import CoalignError
from coalign.lm import LM, EndpointSettings, make_lm

T = TypeVar("T")
R = TypeVar("R")


class WorkerLost(CoalignError, RuntimeError):
    """The worker holding a pinned model instance died; redo the item on another one."""


class BaseExecutor(abc.ABC):
    """Runs items concurrently in this process; subclasses decide how many and where LMs live.

    ``workers`` is how many items are in flight at once.
    """

    workers: int = 1

    @abc.abstractmethod
    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn`` over ``items``; results in item order. The first exception (in item order)
        is raised once the items before it are yielded."""

    def lm(self, spec: str, endpoint: EndpointSettings | None = None) -> LM:
        """The backend for the model ``spec`` (``llamacpp:NAME``, ``openai:MODEL@URL``)."""
        return make_lm(spec, endpoint=endpoint)

    def replicas(self, spec: str, factory: Callable[[str], LM]) -> list[LM]:
        """Independent instances of one model, each for one item at a time (work that needs
        one model's state, such as a table build's KV cache). Here: a single one."""
        return [factory(spec)]

    def close(self) -> None:  # optional hook: release workers
        return None

    def __enter__(self) -> BaseExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SerialExecutor(BaseExecutor):
    """One item at a time in the calling thread (the null executor)."""

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return _each(fn, items)


class ThreadExecutor(BaseExecutor):
    """``workers`` threads of this process: the default, and what every run did before Ray.

    Local llama.cpp calls on one model are serialized by its lock; threads overlap the rest
    (retrieval, scoring, endpoint calls, the store).
    """

    def __init__(self, workers: int = 1) -> None:
        self.workers = max(1, workers)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        items = list(items)
        if self.workers == 1 or len(items) <= 1:  # no pool: same thread, same stack traces
            yield from _each(fn, items)
            return
        pool = ThreadPoolExecutor(max_workers=min(self.workers, len(items)))
        try:
            for future in [pool.submit(fn, item) for item in items]:
                yield future.result()
        finally:  # on an error or an interrupt, items not started are dropped, not waited for
            pool.shutdown(wait=True, cancel_futures=True)


def _each(fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
    # not the builtin map: a StopIteration escaping fn would end it early without a word, and
    # a table build would report its unbuilt questions as none to do
    for item in items:
        yield fn(item)
