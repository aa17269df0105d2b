"""Embedded backend: GGUF models run in-process by llama-cpp-python.

Components share models: a :class:`ModelPool` keeps one loaded ``Llama`` per (file, n_ctx) for all
:class:`LlamaCpp` instances that use it, and a lock per loaded model serializes calls, because a
llama.cpp context is not thread-safe.
"""

from __future__ import annotations

import atexit
import functools
import os
import threading
import time
import warnings
import weakref
from dataclasses import dataclass
from typing import Any

from coalign.errors import ConfigError
from coalign.lm._base import LMError, LMRequest, LMResponse
from coalign.lm._models import ModelResolver, ResolvedModel, bundled_names, find_bundled

DEFAULT_MODEL = "qwen2.5-0.5b"
DEFAULT_N_CTX = 2048


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A loaded ``Llama`` plus the lock that every call on it must hold."""

    name: str
    path: str
    n_ctx: int
    llama: Any  # llama_cpp.Llama (imported lazily: the package takes a while to import)
    lock: threading.Lock
    load_s: float
    n_threads: int
    closed: threading.Event  # set by ModelPool.clear(); callers holding it must fetch again


def _load_llama(path: str, n_ctx: int, n_threads: int) -> Any:
    try:
        from coalign.lm._prefill import PREFILL_CHUNK, chunked_llama_class

        llama_class = chunked_llama_class()
    except ImportError:
        raise LMError(
            "llamacpp: the llama-cpp-python package is missing; local models need the local "
            "extra: pip install 'coalign[local]' (from a checkout: make install)"
        ) from None
    _warn_once_if_amx()
    return llama_class(
        model_path=path,
        n_ctx=n_ctx,
        n_threads=n_threads,
        n_threads_batch=n_threads,
        n_batch=PREFILL_CHUNK,
        n_ubatch=PREFILL_CHUNK,
        verbose=False,
    )


def amx_warning(system_info: str) -> str | None:
    """The warning for a llama.cpp build with AMX kernels (``system_info`` is llama.cpp's
    feature line): they segfault on the first prompt on some Sapphire Rapids machines, a crash
    no Python code can catch, so say why before it happens."""
    if "AMX_INT8 = 1" not in system_info:
        return None
    return ("llamacpp: this llama-cpp-python build uses AMX kernels, which segfault on some CPUs; "
            "if generation crashes, reinstall it as the Makefile does (LLAMA_CMAKE_ARGS, "
            "--no-cache-dir)")


@functools.cache
def _warn_once_if_amx() -> None:
    import llama_cpp

    message = amx_warning(llama_cpp.llama_print_system_info().decode(errors="replace"))
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def default_threads() -> int:
    """llama.cpp threads: ``$COALIGN_LM_THREADS``, else all cores unless they are oversubscribed.

    llama.cpp's default is half the cores, which leaves decode speed on the table on an idle
    machine. But its worker threads spin at barriers: when other processes already keep every core
    busy (1-minute load average above the core count), two threads on two shared cores were
    measured 10-25x slower than one. Output does not depend on the thread count.
    """
    env = os.environ.get("COALIGN_LM_THREADS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ConfigError(
                f"COALIGN_LM_THREADS: expected a positive integer (got {env!r}); unset it to "
                "use all idle cores"
            )
        return int(env)
    cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0] > cores
    except OSError:  # not available on this platform
        busy = False
    return 1 if busy else cores


class ModelPool:
    """Loads each (model file, n_ctx) once and hands the same object to every caller.

    Args:
        resolver: finds, assembles and verifies model files.
        n_threads: llama.cpp threads (default :func:`default_threads`, decided at first load).
    """

    def __init__(self, resolver: ModelResolver | None = None, n_threads: int | None = None) -> None:
        self.resolver = resolver or ModelResolver()
        self.n_threads = n_threads
        self._models: dict[tuple[str, int], LoadedModel] = {}
        self._by_name: dict[tuple[str, int], LoadedModel] = {}  # skips re-resolving per call
        self._lock = threading.Lock()
        # Free the models before interpreter teardown: llama.cpp's own finalizers run after its
        # C bindings are gone and print "TypeError: 'NoneType' object is not callable" otherwise.
        atexit.register(_clear_pool, weakref.ref(self))

    def get(self, model: str, n_ctx: int) -> LoadedModel:
        """The loaded model for ``model`` (name or path), loading it on first use.

        Raises:
            LMError: the model file is missing, fails its checksum, or llama.cpp cannot load it.
        """
        with self._lock:
            loaded = self._by_name.get((model, n_ctx))
            if loaded is not None:
                return loaded
            resolved = self.resolver.resolve(model)
            key = (str(resolved.path), n_ctx)
            loaded = self._models.get(key)
            if loaded is None:
                loaded = self._load(resolved, n_ctx)
                self._models[key] = loaded
            self._by_name[(model, n_ctx)] = loaded
            return loaded

    def _load(self, resolved: ResolvedModel, n_ctx: int) -> LoadedModel:
        self.resolver.verify(resolved)  # before the first load of this file in this process
        threads = self.n_threads or default_threads()
        start = time.perf_counter()
        try:
            llama = _load_llama(str(resolved.path), n_ctx, threads)
        except LMError:
            raise
        except Exception as exc:  # llama.cpp reports load failures as ValueError/RuntimeError
            raise LMError(
                f"llamacpp:{resolved.name}: cannot load {resolved.path} ({_first_line(exc)})"
            ) from exc
        return LoadedModel(
            resolved.name,
            str(resolved.path),
            n_ctx,
            llama,
            threading.Lock(),
            time.perf_counter() - start,
            threads,
            threading.Event(),
        )

    def loaded(self) -> list[tuple[str, int]]:
        """(path, n_ctx) of every model currently held."""
        with self._lock:
            return list(self._models)

    def clear(self) -> None:
        """Drop every loaded model (frees their memory once no call holds them)."""
        with self._lock:
            models = list(self._models.values())
            self._models.clear()
            self._by_name.clear()
        for loaded in models:
            with loaded.lock:
                loaded.closed.set()
                loaded.llama.close()


def _clear_pool(ref: weakref.ref[ModelPool]) -> None:
    pool = ref()
    if pool is not None:
        pool.clear()


@functools.cache
def default_pool() -> ModelPool:
    """The process-wide pool shared by every :class:`LlamaCpp` not given its own."""
    return ModelPool()


class LlamaCpp:
    """The embedded LM backend (default model: Qwen2.5-Coder-0.5B-Instruct Q4_K_M).

    Temperature 0 decodes greedily (deterministic). Above 0 it samples with
    ``seed = request.seed()``, so Monte-Carlo samples with distinct ``sample_index`` differ and
    each one reproduces.

    Args:
        model: ``"qwen2.5-0.5b"``, ``"smollm2-135m"`` or a path to a GGUF file with a chat template.
        n_ctx: context window in tokens (prompt + completion); small keeps memory low.
        pool: where models are loaded (default: the process-wide :func:`default_pool`).
        top_p, top_k, min_p: sampling filters used when temperature > 0.
        reuse_prefix: reuse the KV cache of the previous call's common prompt prefix, in whole
            64-token chunks (see :mod:`coalign.lm._prefill`): faster on shared prefixes, and an
            answer stays the same whatever the call before it. Off evaluates every prompt from
            an empty cache (the same answers, slower).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        n_ctx: int = DEFAULT_N_CTX,
        pool: ModelPool | None = None,
        top_p: float = 0.95,
        top_k: int = 40,
        min_p: float = 0.05,
        reuse_prefix: bool = True,
    ) -> None:
        if find_bundled(model) is None and not os.path.isfile(os.path.expanduser(model)):
            # refused here, not at the first call: a run config naming it is then refused
            # before its run starts
            raise LMError(f"model {model!r}: not a bundled model ({', '.join(bundled_names())}) "
                          "and no GGUF file at that path")
        self.model = model
        self.reuse_prefix = reuse_prefix
        self.n_ctx = n_ctx
        self.pool = pool or default_pool()
        self._sampling = {"top_p": top_p, "top_k": top_k, "min_p": min_p}

    @property
    def name(self) -> str:
        # Non-default sampling filters change answers, so they belong in the cache key.
        defaults = {"top_p": 0.95, "top_k": 40, "min_p": 0.05}
        changed = [f"{k}={v}" for k, v in self._sampling.items() if defaults[k] != v]
        return f"llamacpp:{self.model}" + (f"[{','.join(changed)}]" if changed else "")

    def load(self) -> LoadedModel:
        """Load (or fetch from the pool) the default model now rather than on first call."""
        return self.pool.get(self.model, self.n_ctx)

    def generate(self, request: LMRequest) -> LMResponse:
        model = request.model or self.model
        loaded = self.pool.get(model, self.n_ctx)
        kwargs: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "stop": list(request.stop),
            **self._sampling,
        }
        if request.temperature > 0:
            # 0xFFFFFFFF means "random seed" to llama.cpp: fold it away to stay reproducible.
            kwargs["seed"] = request.seed() % 0xFFFFFFFF
        waited = time.perf_counter()
        while True:
            with loaded.lock:
                if loaded.closed.is_set():  # the pool was cleared meanwhile: load again
                    loaded = self.pool.get(model, self.n_ctx)
                    continue
                start = time.perf_counter()
                out = self._complete(loaded, model, kwargs)
                latency = time.perf_counter() - start
                break
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return LMResponse(
            text=choice["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            model=model,
            latency_s=latency,
            extra={
                "finish_reason": choice.get("finish_reason"),
                "wait_s": start - waited,
                "local": True,
            },
        )

    def _complete(self, loaded: LoadedModel, model: str, kwargs: dict[str, Any]) -> dict:
        if not self.reuse_prefix:
            loaded.llama.reset()
        try:
            return loaded.llama.create_chat_completion(**kwargs)
        except Exception as exc:
            raise LMError(
                f"llamacpp:{model}: generation failed ({_first_line(exc)}); if the prompt is "
                f"too long, raise n_ctx (now {self.n_ctx}) or shorten it"
            ) from exc

    def close(self) -> None:
        # Models belong to the pool and may serve other components; ModelPool.clear() frees them.
        return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
