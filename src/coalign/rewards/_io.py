"""Save and load a ``LocalRewardModel``: heads in safetensors, config in JSON, never pickle.

A saved model is a folder: ``heads.safetensors`` (every head's tensors, keyed ``h<i>.<param>``),
``config.json`` (format version, backbone id, components with descriptions and head shapes,
training config, sha256 of the weights file) and ``buffer.jsonl`` (the replay buffer's pairs with
their digests, so stage 2 can continue after a restart). Each file is written to a temp name and
renamed. Loading checks the format, the weights digest, the backbone and every tensor shape, and
refuses anything inconsistent with a one-line ``StoreError``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from safetensors.torch import load_file, save_file

from coalign.errors import CoalignError, StoreError
from coalign.files import replacing
from coalign.pairs import PreferencePair, canonical_json
from coalign.rewards._backbone import Backbone, MiniLMBackbone
from coalign.rewards._checks import Check, Evidence
from coalign.rewards._finetune import FinetuneConfig, restore_finetune, trainable_state
from coalign.rewards._heads import TrainConfig, make_head
from coalign.rewards._model import LocalRewardModel

FORMAT = "coalign-lrf"
VERSION = 1


def _atomic_write(path: Path, write) -> None:
    with replacing(path) as tmp:
        write(str(tmp))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save_reward_model(model: LocalRewardModel, folder: str | Path) -> Path:
    """Write ``model`` (heads, config, replay buffer) into ``folder``; returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = sorted(model.heads)
    tensors = {
        f"h{i}.{key}": value.detach().contiguous()
        for i, name in enumerate(names)
        for key, value in model.heads[name].state_dict().items()
    }
    weights = folder / "heads.safetensors"
    _atomic_write(weights, lambda tmp: save_file(tensors, tmp))
    buffer_lines = [
        canonical_json({"digest": p.digest, "pair": p.to_json()}) for p in model.buffer.pairs()
    ]
    _atomic_write(
        folder / "buffer.jsonl",
        lambda tmp: Path(tmp).write_text("".join(line + "\n" for line in buffer_lines), "utf-8"),
    )
    finetune = getattr(model.backbone, "finetune_config", None)
    if finetune is not None:
        state = trainable_state(model.backbone, finetune)
        _atomic_write(folder / "backbone.safetensors", lambda tmp: save_file(state, tmp))
    config = {
        "finetune": dataclasses.asdict(finetune) if finetune is not None else None,
        "format": FORMAT,
        "version": VERSION,
        "backbone": model.backbone.id,
        "emb_dim": model.backbone.dim,
        "n_features": model.n_features,
        "train_config": dataclasses.asdict(model.config),
        "components": [
            {"name": n, "description": model.descriptions.get(n, n), "index": i}
            for i, n in enumerate(names)
        ],
        "weights_sha256": _sha256(weights),
        # the checks' evidence by check name; the checks themselves are code the loader is given
        "checks": {c: [{"name": ch.name, **e.to_json()} for ch, e in
                       zip(model.checks.get(c, ()), found, strict=True)]
                   for c, found in sorted(model.evidence.items())},
    }
    _atomic_write(
        folder / "config.json",
        lambda tmp: Path(tmp).write_text(json.dumps(config, indent=2, sort_keys=True), "utf-8"),
    )
    return folder


def load_reward_model(folder: str | Path, backbone: Backbone,
                      checks: Mapping[str, Sequence[Check]] | None = None) -> LocalRewardModel:
    """Rebuild a saved model on ``backbone`` (which must have the id it was trained with).

    ``checks``: the components' gold-free checks, as the saved model was built with; a check's
    saved evidence is matched by its name (a check the folder does not know starts with none).
    """
    folder = Path(folder)
    config = _read_config(folder / "config.json")
    weights = folder / "heads.safetensors"
    if not weights.is_file():
        raise StoreError(
            f"reward model {folder}: heads.safetensors is missing; save the model again"
        )
    if _sha256(weights) != config["weights_sha256"]:
        raise StoreError(
            f"reward model {weights}: content does not match the digest in config.json"
        )
    if config.get("finetune"):
        _restore_backbone(folder, config, backbone)
    if config["backbone"] != backbone.id:
        raise StoreError(
            f"reward model {folder} was trained on backbone {config['backbone']!r}, "
            f"got {backbone.id!r}; load it with the same backbone"
        )
    try:
        tensors = load_file(str(weights))
        train_config = TrainConfig(**config["train_config"])
    except (CoalignError, TypeError, ValueError, OSError) as exc:
        raise StoreError(f"reward model {folder} is unreadable ({exc}); save it again") from exc
    descriptions = {c["name"]: c["description"] for c in config["components"]}
    model = LocalRewardModel(backbone, descriptions, train_config, checks)
    try:
        model.evidence = _evidence(config.get("checks") or {}, model.checks)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StoreError(f"reward model {folder}: config.json's checks are unreadable "
                         f"({exc!r}); save it again") from exc
    if model.n_features != config["n_features"] or backbone.dim != config["emb_dim"]:
        raise StoreError(
            f"reward model {folder}: feature or embedding width differs from config.json"
        )
    for comp in config["components"]:
        head = make_head(backbone.dim, model.n_features, train_config, 0)
        prefix = f"h{comp['index']}."
        state = {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}
        try:
            head.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            first = str(exc).splitlines()[0]
            raise StoreError(
                f"reward model {weights}: head of {comp['name']!r} does not fit ({first})"
            ) from exc
        head.eval()
        model.heads[comp["name"]] = head
    model.buffer.add(_read_buffer(folder / "buffer.jsonl"))
    return model


def _evidence(saved: Mapping[str, list], checks: Mapping[str, Sequence[Check]]
              ) -> dict[str, list[Evidence]]:
    out: dict[str, list[Evidence]] = {}
    for component, rows in saved.items():
        if component not in checks:
            continue
        by_name = {r["name"]: Evidence(float(r["agreed"]), int(r["separated"])) for r in rows}
        out[component] = [by_name.get(c.name, Evidence()) for c in checks[component]]
    return out


def _restore_backbone(folder: Path, config: dict, backbone: Backbone) -> None:
    path = folder / "backbone.safetensors"
    if not isinstance(backbone, MiniLMBackbone) or backbone.adapter_tag:
        raise StoreError(
            f"reward model {folder} has a fine-tuned encoder; pass a fresh MiniLMBackbone"
        )
    if not path.is_file():
        raise StoreError(f"reward model {folder}: backbone.safetensors is missing; save it again")
    try:
        ft = config["finetune"]
        ft["target_modules"] = tuple(ft["target_modules"])
        restore_finetune(backbone, FinetuneConfig(**ft), load_file(str(path)))
    except (CoalignError, TypeError, ValueError, OSError, KeyError) as exc:
        raise StoreError(f"reward model {path} is unusable ({exc})") from exc


def _read_config(path: Path) -> dict:
    if not path.is_file():
        raise StoreError(f"reward model config {path} is missing; pass the folder save wrote")
    try:
        config = json.loads(path.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(f"reward model config {path} is not valid JSON ({exc})") from exc
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise StoreError(f"reward model config {path} is not a {FORMAT} file")
    if config.get("version") != VERSION:
        raise StoreError(
            f"reward model config {path} has version {config.get('version')!r}; "
            f"this coalign reads version {VERSION}"
        )
    required = ("backbone", "emb_dim", "n_features", "train_config", "components", "weights_sha256")
    missing = [k for k in required if k not in config]
    if missing:
        raise StoreError(f"reward model config {path} lacks {missing}; save the model again")
    return config


def _read_buffer(path: Path) -> list[PreferencePair]:
    if not path.is_file():
        return []
    pairs = []
    for line_no, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        try:
            record = json.loads(line)
            pairs.append(PreferencePair.from_json(record["pair"], digest=record["digest"]))
        except (CoalignError, KeyError, TypeError, json.JSONDecodeError) as exc:
            raise StoreError(
                f"reward model buffer {path} line {line_no} is corrupt ({exc})"
            ) from exc
    return pairs
