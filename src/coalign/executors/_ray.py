"""The Ray executor: model calls run on Ray actors, each holding its own model instance.

The driver keeps orchestrating: it walks the system graph for several items at once (threads),
answers from its response cache, and sends each cache miss to a free actor of that model. So
the cache and the run store are written by the driver alone, user systems (closures, retrieval
indexes, metrics) never need to be picklable, and a call is a pure function of its request:
when an actor dies, the call is sent to another actor, or, with none left, served by a model
built in the driver. Actors build their models from the spec string (llama.cpp models cannot
be pickled); nothing reaches them but requests.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

from coalign.errors import ConfigError
from coalign.executors._base import ThreadExecutor, WorkerLost
from coalign.lm import LM, EndpointSettings, LMError, LMRequest, LMResponse, make_lm, redact_url

log = logging.getLogger(__name__)
LMFactory = Callable[[str], LM]
LOCAL = "local"  # address: start a private Ray instance on this machine


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("executor 'ray' needs Ray: pip install 'coalign[ray]'") from None
    return ray


class ModelServer:
    """One model instance inside a Ray actor; returns a backend error as a value so that the
    driver raises it as the backend's own error (an actor error means the actor is gone)."""

    def __init__(self, spec: str, factory: LMFactory, threads: int) -> None:
        # llama.cpp would otherwise size its threads by the whole node, not this actor's share
        os.environ.setdefault("COALIGN_LM_THREADS", str(threads))
        self.lm = factory(spec)
        load = getattr(self.lm, "load", None)
        if load is not None:  # a model missing on this node fails now, not at the first item
            load()
        self.calls = 0

    def name(self) -> str:
        return self.lm.name

    def generate(self, request: LMRequest) -> LMResponse | Exception:
        self.calls += 1
        try:
            response = self.lm.generate(request)
        except Exception as exc:  # noqa: BLE001 - sent back and re-raised by the driver
            return exc
        return response._replace(extra=dict(response.extra))  # a mappingproxy cannot pickle

    def reset(self) -> None:
        reset = getattr(self.lm, "reset", None)
        if reset is not None:
            reset()

    def stats(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "calls": self.calls}


class ActorPoolLM:
    """An LM whose calls go to ``n`` actors serving ``spec`` (``concurrency`` calls each).

    ``name`` is the backend's own name, so a response cache filled by the thread executor
    answers the Ray executor and back.
    """

    def __init__(self, spec: str, factory: LMFactory, n: int, *, concurrency: int = 1,
                 cpus: float = 1.0) -> None:
        ray = import_ray()
        self.spec = spec
        self._factory = factory
        server = ray.remote(ModelServer).options(num_cpus=cpus, max_concurrency=concurrency)
        self.actors = [server.remote(spec, factory, max(1, int(cpus))) for _ in range(n)]
        self._alive = set(range(n))
        self._free: queue.Queue[int] = queue.Queue()
        for _ in range(concurrency):
            for i in range(n):
                self._free.put(i)
        self._lock = threading.Lock()
        self._local: LM | None = None
        try:  # waits for every model to load: a bad spec fails here, not at the first item
            names = ray.get([a.name.remote() for a in self.actors])
        except ray.exceptions.RayError as exc:
            self.close()
            first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise LMError(redact_url(f"model {spec!r}: a Ray actor failed to start it: "
                                     f"{first}")) from None
        self._name = names[0]

    @property
    def name(self) -> str:
        return self._name

    @property
    def alive(self) -> int:
        with self._lock:
            return len(self._alive)

    def generate(self, request: LMRequest) -> LMResponse:
        ray = import_ray()
        while (i := self._acquire()) is not None:
            try:
                out = ray.get(self.actors[i].generate.remote(request))
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnschedulableError):
                self._drop(i)
                continue  # the request is pure: the next actor answers it the same way
            self._free.put(i)
            if isinstance(out, Exception):
                raise out
            return out
        return self._driver_lm().generate(request)

    def _acquire(self) -> int | None:
        """A free slot of a live actor; ``None`` once every actor has died."""
        while True:
            with self._lock:
                if not self._alive:
                    return None
            try:
                i = self._free.get(timeout=0.2)
            except queue.Empty:
                continue
            with self._lock:
                if i in self._alive:
                    return i  # a dead actor's slots are dropped as they come up

    def _drop(self, i: int) -> None:
        with self._lock:
            if i in self._alive:
                self._alive.discard(i)
                log.warning("Ray actor %d of %s died; %d left%s", i, redact_url(self.spec),
                            len(self._alive), "" if self._alive else ": the driver serves it")

    def _driver_lm(self) -> LM:
        with self._lock:
            if self._local is None:
                self._local = self._factory(self.spec)
            return self._local

    def pinned(self) -> list[PinnedLM]:
        """One LM per live actor, bypassing the free-slot queue (see ``PinnedLM``)."""
        with self._lock:
            return [PinnedLM(self, i) for i in sorted(self._alive)]

    def stats(self) -> list[dict[str, Any]]:
        """Per live actor: its process id and the calls it served."""
        ray = import_ray()
        with self._lock:
            live = sorted(self._alive)
        return ray.get([self.actors[i].stats.remote() for i in live])

    def close(self) -> None:
        ray = import_ray()
        for actor in self.actors:
            ray.kill(actor)
        with self._lock:
            self._alive.clear()
            if self._local is not None:
                self._local.close()


class PinnedLM:
    """One actor of a pool for work that must stay on one model instance (a table build's
    question, which relies on that model's KV cache). If the actor dies, ``WorkerLost`` tells
    the caller to redo the item elsewhere: switching instances mid-item would change it."""

    def __init__(self, pool: ActorPoolLM, index: int) -> None:
        self.pool, self.index = pool, index

    @property
    def name(self) -> str:
        return self.pool.name

    def generate(self, request: LMRequest) -> LMResponse:
        return self._call("generate", request)

    def reset(self) -> None:
        self._call("reset")

    def _call(self, method: str, *args: Any) -> Any:
        ray = import_ray()
        try:
            out = ray.get(getattr(self.pool.actors[self.index], method).remote(*args))
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnschedulableError):
            self.pool._drop(self.index)
            raise WorkerLost(f"Ray actor {self.index} of {redact_url(self.pool.spec)} "
                             "died") from None
        if isinstance(out, Exception):
            raise out
        return out

    def close(self) -> None:  # the pool owns the actor
        return None


class RayExecutor(ThreadExecutor):
    """Items are driven by ``workers * concurrency`` driver threads; each model is served by
    ``workers`` Ray actors of ``cpus`` CPUs.

    Args:
        address: a Ray cluster (``auto``: the one this machine belongs to; ``HOST:6379``;
            ``ray://HOST:10001`` through Ray Client) or ``local`` to start one here. When Ray is
            already initialized (a Ray job, a test), that cluster is used and left running.
        lm_factory: builds a model from its spec inside an actor; default ``make_lm``.
    """

    def __init__(self, address: str = "auto", workers: int = 2, *, concurrency: int = 1,
                 cpus: float = 1.0, endpoint: EndpointSettings | None = None,
                 lm_factory: LMFactory | None = None) -> None:
        super().__init__(workers * concurrency)
        ray = import_ray()
        self.actors_per_model, self.concurrency, self.cpus = workers, concurrency, cpus
        self._factory = lm_factory
        self._endpoint = endpoint
        self._owns = not ray.is_initialized()
        if self._owns:
            try:
                ray.init(address=None if address == LOCAL else address,
                         log_to_driver=False, configure_logging=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ConfigError(redact_url(
                    f"executor ray {address!r}: cannot connect ({exc}); start a cluster with "
                    "`ray start --head`, give its address, or use ray: local")) from None
        self.pools: dict[str, ActorPoolLM] = {}
        self._replica_pools: list[ActorPoolLM] = []

    def lm(self, spec: str, endpoint: EndpointSettings | None = None) -> LM:
        if spec not in self.pools:
            factory = self._factory or functools.partial(make_lm,
                                                         endpoint=endpoint or self._endpoint)
            self.pools[spec] = ActorPoolLM(spec, factory, self.actors_per_model,
                                           concurrency=self.concurrency, cpus=self.cpus)
        return self.pools[spec]

    def replicas(self, spec: str, factory: LMFactory) -> list[LM]:
        pool = ActorPoolLM(spec, factory, self.actors_per_model, cpus=self.cpus)
        self._replica_pools.append(pool)
        return list(pool.pinned())

    def close(self) -> None:
        for pool in [*self.pools.values(), *self._replica_pools]:
            pool.close()
        self.pools.clear()
        self._replica_pools.clear()
        if self._owns:
            import_ray().shutdown()
            self._owns = False
