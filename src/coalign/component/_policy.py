"""What components driven by a small torch module over a frozen text encoder share.

``PolicyComponent`` is what the weights optimizers (``optimize._weights``, the REINFORCE
baseline) need from such a component: a differentiable log-probability of its outputs and a
seeded draw. ``EncoderPolicy`` is the common base of the ready-made ones (the passage reranker,
the next-item decider): the lazily loaded encoder and a small cache of built modules.
"""

from __future__ import annotations

import math
import random
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

from coalign.component._base import Component
from coalign.errors import ConfigError

MINILM_DIM = 384  # width of the default backbone; known up front so no model loads at build time


@runtime_checkable
class VectorWeights(Protocol):
    """A component whose ``Weights`` value has a compact vector form: the directions that
    change its outputs, without the redundant ones (a bias every candidate shares, two
    weights on one feature). The portfolio loop's weights arm searches that vector; without
    this form it searches the whole state dict flattened."""

    def weights_vector(self, param: str, value: Mapping[str, Any]) -> Any:
        """``value`` as a 1-d numpy vector, or None when it has no compact form."""
        ...

    def weights_from_vector(self, param: str, vector: Any, like: Mapping[str, Any]
                            ) -> dict[str, torch.Tensor]:
        """A state dict shaped like ``like`` that the vector describes."""
        ...


@runtime_checkable
class PolicyComponent(Protocol):
    """A component whose outputs are draws from a differentiable policy in a ``Weights`` param."""

    name: str
    policy_param: str

    def log_prob(self, module: Any, inputs: Mapping[str, Any], outputs: Mapping[str, Any],
                 temperature: float = 1.0) -> torch.Tensor:
        """log π(outputs | inputs) under ``module``, differentiable in its parameters."""
        ...

    def sample(self, module: Any, inputs: Mapping[str, Any], rng: random.Random,
               temperature: float = 1.0) -> dict[str, Any]:
        """One draw of the outputs from π(· | inputs) (no gradient)."""
        ...


def gumbel_top_k(logits: Sequence[float], k: int, rng: random.Random) -> list[int]:
    """A Plackett–Luce draw of the first ``k`` picks: sort logits perturbed by Gumbel noise
    (``k = 1``: one draw from softmax(logits))."""
    keys = [float(s) - math.log(-math.log(rng.random() or 1e-300)) for s in logits]
    return sorted(range(len(keys)), key=lambda i: -keys[i])[:k]


def encoder_dim(backbone: Any) -> int:
    """Embedding width of ``backbone`` (``None``: the default MiniLM, not loaded to find out)."""
    return int(backbone.dim) if backbone is not None else MINILM_DIM


class EncoderPolicy(Component):
    """Base of a component whose ``scorer`` (a ``Weights`` param) reads frozen text embeddings.

    ``backbone``: anything with ``embed(texts) -> array`` and ``dim`` (e.g. the LRF's encoder);
    default: the bundled MiniLM, loaded on first use.
    """

    policy_param = "scorer"

    def __init__(self, name: str, inputs: Sequence[str], outputs: Sequence[str], *,
                 backbone: Any = None, **kwargs: Any) -> None:
        super().__init__(name, inputs, outputs, **kwargs)
        self.dim = encoder_dim(backbone)
        self._backbone = backbone
        self._lock = threading.Lock()
        self._modules: OrderedDict[int, tuple[Any, nn.Module]] = OrderedDict()

    @property
    def backbone(self) -> Any:
        with self._lock:
            if self._backbone is None:
                from coalign.rewards import MiniLMBackbone

                self._backbone = MiniLMBackbone()
            if int(self._backbone.dim) != self.dim:
                raise ConfigError(f"{self.name!r} was built for {self.dim}-d embeddings, "
                                  f"its backbone gives {self._backbone.dim}")
            return self._backbone

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """L2-normalized embeddings of ``texts`` (one row each)."""
        return torch.from_numpy(self.backbone.embed(list(texts)))

    def module(self, value: Mapping[str, Any]) -> nn.Module:
        """The scorer for a config value; the last few are kept (a rebuild per step is waste)."""
        key = id(value)
        with self._lock:
            hit = self._modules.get(key)
            if hit is not None and hit[0] is value:
                self._modules.move_to_end(key)
                return hit[1]
        built = self.params[self.policy_param].build(value)
        with self._lock:
            self._modules[key] = (value, built)  # holding value keeps its id from being reused
            while len(self._modules) > 8:
                self._modules.popitem(last=False)
        return built
