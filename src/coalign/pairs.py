"""Preference pairs: one component's two outputs for one input, ranked by estimated global reward.

Pairs come from Monte-Carlo downstream rollouts (``coalign.rollouts``) and feed the local reward
functions (``coalign.rewards``) and the evidence audit (``coalign.audit``). A pair whose rewards
differ by no more than the tie threshold is kept as a tie: it is evidence, but never trained on.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from coalign.errors import DataError

Label = Literal["a", "b", "tie"]


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the byte form every digest is computed over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def to_jsonable(value: Any) -> Any:
    """Plain JSON form of a value that may hold param values (anything with ``to_json``)."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value


@dataclass(frozen=True)
class PreferencePair:
    """Outputs ``a`` and ``b`` of ``component`` on the same ``inputs``.

    ``reward_a``/``reward_b`` are mean global rewards over ``m`` downstream completions each;
    ``n`` is how many candidates were sampled for this input. ``label`` says which output is
    preferred ("tie" when the gap is within the threshold used at collection).
    """

    component: str
    example_id: str
    inputs: Mapping[str, Any]
    output_a: Mapping[str, Any]
    output_b: Mapping[str, Any]
    reward_a: float
    reward_b: float
    label: Label
    n: int = 2
    m: int = 1
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_tie(self) -> bool:
        return self.label == "tie"

    @property
    def chosen(self) -> Mapping[str, Any]:
        if self.is_tie:
            raise ValueError(f"pair {self.digest[:12]} is a tie: it has no chosen output")
        return self.output_a if self.label == "a" else self.output_b

    @property
    def rejected(self) -> Mapping[str, Any]:
        if self.is_tie:
            raise ValueError(f"pair {self.digest[:12]} is a tie: it has no rejected output")
        return self.output_b if self.label == "a" else self.output_a

    def to_json(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "example_id": self.example_id,
            "inputs": dict(self.inputs),
            "output_a": dict(self.output_a),
            "output_b": dict(self.output_b),
            "reward_a": self.reward_a,
            "reward_b": self.reward_b,
            "label": self.label,
            "n": self.n,
            "m": self.m,
            "meta": dict(self.meta),
        }

    @property
    def digest(self) -> str:
        return hashlib.sha256(canonical_json(self.to_json()).encode("utf-8")).hexdigest()

    @classmethod
    def from_json(cls, record: Mapping[str, Any], digest: str | None = None) -> PreferencePair:
        """Rebuild and validate a stored record; a wrong ``digest`` or missing field is refused."""
        required = ("component", "example_id", "inputs", "output_a", "output_b",
                    "reward_a", "reward_b", "label")
        for name in required:
            if name not in record:
                raise DataError(f"preference pair record is missing field {name!r}")
        for name in ("reward_a", "reward_b"):
            value = record[name]
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not math.isfinite(value):
                raise DataError(f"preference pair field {name!r} must be a finite number, "
                                f"got {value!r}")
        if record["label"] not in ("a", "b", "tie"):
            raise DataError("preference pair field 'label' must be a, b or tie, "
                            f"got {record['label']!r}")
        pair = cls(
            component=str(record["component"]),
            example_id=str(record["example_id"]),
            inputs=dict(record["inputs"]),
            output_a=dict(record["output_a"]),
            output_b=dict(record["output_b"]),
            reward_a=float(record["reward_a"]),
            reward_b=float(record["reward_b"]),
            label=record["label"],
            n=int(record.get("n", 2)),
            m=int(record.get("m", 1)),
            meta=dict(record.get("meta", {})),
        )
        if digest is not None and digest != pair.digest:
            raise DataError(
                f"preference pair digest mismatch for component {pair.component!r} example "
                f"{pair.example_id!r}: stored {digest[:12]}…, content gives {pair.digest[:12]}…"
            )
        return pair


def label_for(reward_a: float, reward_b: float, tie_threshold: float) -> Label:
    """Preference label: the higher reward wins unless the gap is within ``tie_threshold``."""
    gap = reward_a - reward_b
    if abs(gap) <= tie_threshold:
        return "tie"
    return "a" if gap > 0 else "b"
