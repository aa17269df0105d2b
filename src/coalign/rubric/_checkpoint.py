"""Save / load a trained backbone with its vocabulary and rubric variant (for ``arco show``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from safetensors.torch import load_file, save_file

from coalign.errors import ConfigError
from coalign.files import replacing, write_atomic
from coalign.rubric._model import ArcoModel, BackboneConfig
from coalign.rubric._rubric import RubricSpec
from coalign.rubric._text import StepEncoder, Vocab

__all__ = ["load_checkpoint", "save_checkpoint"]


def save_checkpoint(path: Path | str, model: ArcoModel, encoder: StepEncoder, spec: RubricSpec,
                    extra: dict[str, Any] | None = None) -> None:
    """Write ``path/`` with ``model.safetensors`` and ``meta.json`` (each via temp + rename)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    meta = {
        "backbone": model.config.to_json(),
        "vocab": encoder.vocab.to_json(),
        "encoder": {"question_tokens": encoder.question_tokens,
                    "observation_tokens": encoder.observation_tokens,
                    "action_tokens": encoder.action_tokens,
                    "criterion_tokens": encoder.criterion_tokens},
        "spec": {"k": spec.k, "mode": spec.mode, "use_prefix": spec.use_prefix},
        "extra": extra or {},
    }
    with replacing(path / "model.safetensors") as tmp:
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp))
    write_atomic(path / "meta.json", json.dumps(meta))


def load_checkpoint(path: Path | str) -> tuple[ArcoModel, StepEncoder, RubricSpec, dict[str, Any]]:
    """Inverse of ``save_checkpoint``; raises ConfigError naming the missing file."""
    path = Path(path)
    for name in ("meta.json", "model.safetensors"):
        if not (path / name).is_file():
            raise ConfigError(f"checkpoint {path}: missing {name}; write one with "
                              "`python -m benchmarks.arco --save-checkpoint DIR`")
    meta = json.loads((path / "meta.json").read_text())
    model = ArcoModel(BackboneConfig(**meta["backbone"]))
    model.load_state_dict(load_file(str(path / "model.safetensors")))
    model.eval()
    encoder = StepEncoder(Vocab.from_json(meta["vocab"]), **meta["encoder"])
    return model, encoder, RubricSpec(**meta["spec"]), meta["extra"]
