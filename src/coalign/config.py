"""``SystemConfig``: the joint configuration v = (v_1, ..., v_K) of a system, immutable."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from coalign.errors import ConfigError, GraphError
from coalign.files import write_atomic
from coalign.pairs import canonical_json
from coalign.params import Param


class _Component(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def params(self) -> Mapping[str, Param]: ...


class System(Protocol):
    """What a config reads of its system (``coalign.system.System`` is one): its name and its
    components' params. A protocol, so this module sits below the system graph."""

    @property
    def name(self) -> str: ...
    @property
    def components(self) -> Sequence[_Component]: ...
    def component(self, name: str) -> _Component: ...


class SystemConfig(Mapping[str, Mapping[str, Any]]):
    """Component name -> {param name -> value}. Replace one slot with ``with_value``."""

    def __init__(self, system: System, values: Mapping[str, Mapping[str, Any]]) -> None:
        self._system = system
        self._values: dict[str, dict[str, Any]] = {}
        for comp_name, params in values.items():
            comp = system.component(comp_name)
            for pname, value in params.items():
                if pname not in comp.params:
                    raise GraphError(f"unknown param {pname!r} of component {comp_name!r}; "
                                     f"it has {sorted(comp.params) or 'none'}")
                self._values.setdefault(comp_name, {})[pname] = comp.params[pname].validate(value)
        for comp in system.components:
            for pname, spec in comp.params.items():
                self._values.setdefault(comp.name, {}).setdefault(pname, spec.default)
        self._digest: str | None = None

    def __getitem__(self, component: str) -> Mapping[str, Any]:
        return self._values.get(component, {})

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def with_value(self, component: str, param: str, value: Any) -> SystemConfig:
        values = {c: dict(p) for c, p in self._values.items()}
        values.setdefault(component, {})[param] = value
        return SystemConfig(self._system, values)

    def to_json(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for comp_name, params in self._values.items():
            specs = self._system.component(comp_name).params
            out[comp_name] = {p: specs[p].to_json(v) for p, v in params.items()}
        return out

    @classmethod
    def from_json(cls, system: System, data: Mapping[str, Mapping[str, Any]]) -> SystemConfig:
        values: dict[str, dict[str, Any]] = {}
        if not isinstance(data, Mapping):
            raise ConfigError(f"a config is a JSON object of component -> params, got "
                              f"{type(data).__name__}")
        for comp_name, params in data.items():
            specs = system.component(comp_name).params
            if not isinstance(params, Mapping):
                raise ConfigError(f"{comp_name}: params must be a JSON object of name -> value, "
                                  f"got {type(params).__name__}")
            for pname, raw in params.items():
                if pname not in specs:
                    raise GraphError(f"unknown param {pname!r} of component {comp_name!r}")
                try:
                    values.setdefault(comp_name, {})[pname] = specs[pname].from_json(raw)
                except ConfigError as exc:
                    raise ConfigError(f"{comp_name}.{pname}: {exc}") from None
        return cls(system, values)

    @property
    def digest(self) -> str:
        if self._digest is None:
            payload = canonical_json([self._system.name, self.to_json()])
            self._digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
        return self._digest

    def component_digest(self, component: str) -> str:
        """Digest of one component's slot (used to key cached prefixes)."""
        specs = self._system.component(component).params
        payload = canonical_json({p: specs[p].to_json(v) for p, v in self[component].items()})
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def __repr__(self) -> str:
        return f"SystemConfig({self.digest[:12]})"


def read_text_file(path: Path, what: str) -> str:
    """The UTF-8 text of a user's file; a missing, unreadable or non-UTF-8 file is one line
    naming ``what`` it is ("run config", "config file") and the path."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {path}") from None
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot read it ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None


def write_text_file(path: Path, text: str, what: str) -> None:
    """Write a result the user asked for through a temp file renamed into place; a failure
    (missing folder, read-only mount, full disk) is one line naming ``what`` and the path and
    leaves neither a half-written file nor the temp file."""
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot write it ({exc.strerror or exc})") from None
