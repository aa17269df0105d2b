"""The optimized system out of a run dir: one JSON file, loadable without the run.

``export_run`` reads the run store (read-only) and writes the final config: that of the last
ledger row, i.e. the last accepted step (the gate only accepts strict gains, so the best on
validation). A per-instance param chosen by an LRF selector is listed under ``selectors`` with
the digest of the frozen reward it was validated with; that reward model is copied beside the
file (``<name>.lrf-<digest16>/``) and checked against the digest when loaded::

    {"format": "coalign-system", "version": 1,
     "system": "multihop_qa", "model": "qwen2.5-0.5b", "lm": null,   # lm: replay:DIR if any
     "config": {"retriever": {"k": 5}, ...},
     "selectors": {"answerer.model": {"digest": "<sha256>", "reward_model": "system.lrf-…",
                                      "backbone": "minilm", "costs": {...}, "cost_weight": 0.0}},
     "source": {"run_dir": "...", "step": 7, "val_score": 0.61},
     "cascade": {"configs": [{...}, ...], ...}}   # only with export_run(..., cascade=fit)

``cascade`` adds a per-input cascade (``coalign.cascade``; fitted by
``coalign.job.fit_run_cascade``): the final config first, then its fallbacks, with its in-sample
validation figures; ``coalign evaluate`` then runs each fallback where the output fails its
checks.

``load_system(path, task)`` gives the config and the selectors to run it with;
``coalign evaluate SYSTEM --config FILE`` reads the same file (or a plain config mapping).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coalign.cascade import Cascade, CascadeFit
from coalign.config import SystemConfig, read_text_file
from coalign.errors import ConfigError, StoreError
from coalign.files import replacing_dir, write_atomic
from coalign.runtime import Runtime, Selector, selector_tag
from coalign.store import RunStore
from coalign.task import Task

FORMAT = "coalign-system"
VERSION = 1


@dataclass(frozen=True)
class LoadedSystem:
    """A system config and the selectors of its per-instance params (none for a plain config)."""

    config: SystemConfig
    selectors: Mapping[tuple[str, str], Selector] = field(default_factory=dict)
    digests: Mapping[tuple[str, str], str] = field(default_factory=dict)
    cascade: Cascade | None = None  # its first config is ``config``

    def runtime(self, base: Runtime) -> Runtime:
        """``base`` with this system's selectors in place."""
        return dataclasses.replace(base, selectors={**base.selectors, **self.selectors})

    @property
    def tag(self) -> str:
        """Trace tag of an evaluation: configs with other selectors are stored apart."""
        return "eval" + selector_tag(self.digests)


def export_run(run_dir: Path, out: Path, cascade: CascadeFit | None = None) -> dict[str, Any]:
    """Write the final config of the run in ``run_dir`` to ``out`` (and each selector's reward
    model beside it), with ``cascade`` (``coalign.job.fit_run_cascade``'s) beside it; returns
    what was written. Each file appears whole or not at all."""
    from coalign.optimize import checked_steps, policies_of, selector_dir

    with RunStore(run_dir, readonly=True) as store:
        run_config = store.get_meta("run_config")
        steps = checked_steps(store)
        if not isinstance(run_config, dict):
            raise ConfigError(f"{run_dir} has no run config: it was not made by coalign optimize")
        if not steps:
            raise ConfigError(f"{run_dir} has no optimizer step yet; run or resume it first")
        t, state, last = steps[-1]
        try:
            policies = policies_of(last)
        except StoreError as exc:
            raise StoreError(f"{run_dir} step {t}: {exc}") from None
        val_score = last["val_after"] if state == "accepted" else last["val_before"]
    costs = run_config.get("choice_costs") or {}
    copied: list[Path] = []  # reward models copied here: removed again if the file is not
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        selectors = {}
        for (comp, param), digest in sorted(policies.items()):
            name = f"{out.stem}.lrf-{digest[:16]}"
            if not (out.parent / name).exists():
                copied.append(out.parent / name)
            _copy_dir(run_dir / selector_dir(digest), out.parent / name)
            selectors[f"{comp}.{param}"] = {
                "digest": digest, "reward_model": name, "backbone": run_config.get("backbone"),
                "costs": costs.get(f"{comp}.{param}", {}),
                "cost_weight": run_config.get("cost_weight", 0.0)}
        doc = {"format": FORMAT, "version": VERSION, "system": run_config.get("system"),
               "model": run_config.get("model"), "models": run_config.get("models"),
               "lm": run_config.get("lm"),
               "config": last["config"], "selectors": selectors,
               "source": {"run_dir": str(run_dir), "step": t, "val_score": val_score},
               **({"cascade": cascade.to_json()} if cascade is not None else {})}
        _write_json(out, doc)
    except OSError as exc:  # a read-only mount, a full disk, a file where a folder should be
        for folder in copied:
            shutil.rmtree(folder, ignore_errors=True)
        why = exc.strerror or "copy failed"
        raise StoreError(f"export: cannot write {out} ({why}); nothing was written: pass --out "
                         "with a writable path or free disk space") from None
    return doc


def load_system(path: Path, task: Task) -> LoadedSystem:
    """The system config in ``path`` (an exported file or a plain component -> params mapping)
    for ``task``, with its selectors; each failure is one line naming the file."""
    text = read_text_file(path, "config file")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"config file {path}: JSON nested too deeply") from None
    exported = isinstance(raw, dict) and raw.get("format") == FORMAT
    try:
        if not exported:
            return LoadedSystem(SystemConfig.from_json(task.system, raw))
        if raw.get("version") != VERSION:
            raise ConfigError(f"format version {raw.get('version')!r}; this coalign reads "
                              f"{VERSION} (export it again)")
        config = SystemConfig.from_json(task.system, raw.get("config"))
        selectors, digests = _selectors(path.parent, task, raw.get("selectors") or {})
        cascade = None
        if raw.get("cascade") is not None:
            spec = raw["cascade"]
            cascade = Cascade.from_json(task.system, spec.get("configs")
                                        if isinstance(spec, dict) else None)
            if cascade.configs[0] != config or selectors:
                raise ConfigError("'cascade' must start with 'config' and needs no selectors")
    except (ConfigError, StoreError) as exc:
        raise ConfigError(f"config file {path}: {exc}") from None
    return LoadedSystem(config, selectors, digests, cascade)


def _selectors(folder: Path, task: Task, raw: Any
               ) -> tuple[dict[tuple[str, str], Selector], dict[tuple[str, str], str]]:
    from coalign.optimize import RewardSelector, choice_costs, load_frozen
    from coalign.rewards import make_backbone

    if not isinstance(raw, dict):
        raise ConfigError("'selectors' must map component.param to a selector")
    selectors: dict[tuple[str, str], Selector] = {}
    digests: dict[tuple[str, str], str] = {}
    for slot, spec in raw.items():
        if not isinstance(spec, dict) or not all(
                isinstance(spec.get(k), str) for k in ("digest", "reward_model", "backbone")):
            raise ConfigError(f"selector {slot!r} needs digest, reward_model and backbone")
        (key, costs), = choice_costs(task, {slot: spec.get("costs") or {}}).items()
        model = load_frozen(folder / spec["reward_model"], make_backbone(spec["backbone"]),
                            spec["digest"])
        selectors[key] = RewardSelector(model, costs, float(spec.get("cost_weight") or 0.0))
        digests[key] = spec["digest"]
    return selectors, digests


def _copy_dir(src: Path, dst: Path) -> None:
    """``src`` copied to ``dst`` via a temp folder renamed into place (replacing an old copy)."""
    if not src.is_dir():
        raise StoreError(f"selector reward model {src} is missing; the run dir is incomplete")
    with replacing_dir(dst, overwrite=True) as tmp:
        shutil.copytree(src, tmp, dirs_exist_ok=True)


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
