"""``ItemDecider``: picks one of several candidates with a small trainable scorer, as a policy.

Built for next-item selection: upstream LLM components describe the shopper (``interests``)
and assess the candidates (``assessment``, which usually names the best one by number); the
decider scores each candidate from a handful of features and picks the best. Untrained, it
follows the assessment's pick, ties and unparseable assessments broken by how close a candidate
is to the described interests, so the unoptimized system decides exactly as its LLMs do.
Trained by the weights optimizers, it learns how far to trust each signal. Greedy runs take the
argmax; rollouts draw from softmax(scores / temperature) with the step's seeded rng.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from coalign.component._policy import EncoderPolicy, gumbel_top_k
from coalign.errors import ConfigError
from coalign.params import Weights
from coalign.runtime import RunContext

__all__ = ["FEATURES", "ChoiceScorer", "ItemDecider", "named_pick"]

FEATURES = ("named", "cos_interests", "cos_assessment", "cos_last_item", "cos_session_mean",
            "cos_session_max")
_NUMBER = re.compile(r"(?<![\d.])(\d{1,2})(?![\d.])")


def named_pick(text: str, n: int) -> int | None:
    """0-based index of the first candidate number (1..n) written in ``text``, else None."""
    for match in _NUMBER.finditer(text or ""):
        k = int(match.group(1))
        if 1 <= k <= n:
            return k - 1
    return None


class ChoiceScorer(nn.Module):
    """score_i = prior · named_i + tie · cos_interests_i + out(body(features_i)).

    ``out`` starts at zero, so the untrained scorer is the LLM's pick with the similarity
    tie-break; ``prior`` and ``tie`` are trainable too.
    """

    def __init__(self, hidden: int = 0, prior: float = 1.0, tie: float = 0.1) -> None:
        super().__init__()
        n = len(FEATURES)
        self.prior = nn.Parameter(torch.tensor(float(prior)))
        self.tie = nn.Parameter(torch.tensor(float(tie)))
        self.body: nn.Module = (nn.Sequential(nn.Linear(n, hidden), nn.Tanh()) if hidden
                                else nn.Identity())
        self.out = nn.Linear(hidden or n, 1)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return (self.prior * features[:, 0] + self.tie * features[:, 1]
                + self.out(self.body(features)).squeeze(-1))


LINEAR_STATE = frozenset({"prior", "tie", "out.weight", "out.bias"})


def linear_weights(state: Mapping[str, torch.Tensor]) -> torch.Tensor | None:
    """A scorer without a hidden layer as one weight per feature (``score = w · features``:
    ``prior`` and ``tie`` fold into the first two, the bias moves every candidate alike);
    None for a scorer with a hidden layer."""
    if set(state) != LINEAR_STATE:
        return None
    w = state["out.weight"].detach().reshape(-1).clone().double()
    w[0] += float(state["prior"])
    w[1] += float(state["tie"])
    return w


def linear_state(weights: Any, like: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The scorer state whose ``linear_weights`` are ``weights`` (prior, tie and bias 0)."""
    w = torch.as_tensor(weights, dtype=like["out.weight"].dtype).reshape(like["out.weight"].shape)
    return {"prior": torch.zeros_like(like["prior"]), "tie": torch.zeros_like(like["tie"]),
            "out.weight": w.clone(), "out.bias": torch.zeros_like(like["out.bias"])}


def seeded_choice_scorer(hidden: int, prior: float, tie: float, seed: int) -> ChoiceScorer:
    """A scorer whose random hidden layer (if any) is the same in every process."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ChoiceScorer(hidden, prior, tie)


class ItemDecider(EncoderPolicy):
    """Picks one of ``choices_field``; output ``output`` is the 0-based index as a string, and
    ``item_output`` the picked candidate itself (what a local reward reads: an index alone says
    nothing about the pick).

    Features per candidate (``FEATURES``): whether the assessment names it, its cosine
    similarity to the interests, to the assessment, to the last session item, to the mean
    session item, and its highest similarity to any session item.

    Args:
        backbone: the frozen text encoder (default: the bundled MiniLM, loaded on first use).
        hidden: width of the scorer's hidden layer (0: linear in the features).
        prior: initial weight on the assessment's pick; ``tie``: on interest similarity.
    """

    LR = 0.3  # the scorer's policy-gradient learning rate (``Weights.lr``), read when built

    def __init__(self, name: str = "next_item_decider", *, session_field: str = "session",
                 interests_field: str = "interests", assessment_field: str = "assessment",
                 choices_field: str = "choices", output: str = "choice",
                 item_output: str = "item", backbone: Any = None,
                 hidden: int = 0, prior: float = 1.0, tie: float = 0.1, seed: int = 0,
                 description: str = "", **kwargs: Any) -> None:
        # lr: its weights on cosine features move by units, not hundredths (the loop's
        # default 0.05 left them near their start; of 0.05 / 0.3 / 1.0 on 8 next_item seeds,
        # 0.3 was the best at the smallest budget and level with 1.0 above it, RESULTS.md)
        scorer = Weights(functools.partial(seeded_choice_scorer, hidden, prior, tie, seed),
                         description="candidate scorer over the LLMs' signals and embeddings",
                         lr=self.LR)
        fields = (session_field, interests_field, assessment_field, choices_field)
        super().__init__(name, fields, (output, item_output), backbone=backbone,
                         params={self.policy_param: scorer},
                         description=description or f"picks one of the {choices_field}",
                         **kwargs)
        self.fields = fields
        self.output, self.item_output = output, item_output

    def features(self, inputs: Mapping[str, Any]) -> torch.Tensor:
        """One row of ``FEATURES`` per candidate."""
        session_f, interests_f, assessment_f, choices_f = self.fields
        choices = [str(c) for c in inputs[choices_f] or ()]
        session = [str(s) for s in inputs[session_f] or ()] or [""]
        interests, assessment = str(inputs[interests_f] or ""), str(inputs[assessment_f] or "")
        emb = self.embed([interests, assessment, *session, *choices])
        cand, items = emb[2 + len(session):], emb[2:2 + len(session)]
        mean = items.mean(0)
        mean = mean / mean.norm().clamp_min(1e-12)
        named = torch.zeros(len(choices))
        pick = named_pick(assessment, len(choices))
        if pick is not None:
            named[pick] = 1.0
        by_item = cand @ items.T
        return torch.stack([named, cand @ emb[0], cand @ emb[1], by_item[:, -1], cand @ mean,
                            by_item.max(1).values], dim=1)

    def scores(self, module: nn.Module, inputs: Mapping[str, Any]) -> torch.Tensor:
        return module(self.features(inputs))

    # ``VectorWeights``: a linear scorer searched as its six feature weights
    def weights_vector(self, param: str, value: Mapping[str, Any]) -> Any:
        w = linear_weights(value) if param == self.policy_param else None
        return None if w is None else w.numpy()

    def weights_from_vector(self, param: str, vector: Any, like: Mapping[str, Any]
                            ) -> dict[str, torch.Tensor]:
        return linear_state(vector, like)

    def _choices(self, inputs: Mapping[str, Any]) -> list[Any]:
        choices = list(inputs[self.fields[3]] or ())
        if not choices:
            raise ConfigError(f"{self.name!r}: no candidates in field {self.fields[3]!r}")
        return choices

    def _pick(self, inputs: Mapping[str, Any], index: int) -> dict[str, Any]:
        return {self.output: str(index), self.item_output: str(self._choices(inputs)[index])}

    def sample(self, module: Any, inputs: Mapping[str, Any], rng: random.Random,
               temperature: float = 1.0) -> dict[str, Any]:
        self._choices(inputs)
        with torch.no_grad():
            logits = (self.scores(module, inputs) / temperature).tolist()
        return self._pick(inputs, gumbel_top_k(logits, 1, rng)[0])

    def log_prob(self, module: Any, inputs: Mapping[str, Any], outputs: Mapping[str, Any],
                 temperature: float = 1.0) -> torch.Tensor:
        n = len(self._choices(inputs))
        pick = _index(outputs[self.output], n, self.name)
        return torch.log_softmax(self.scores(module, inputs) / temperature, 0)[pick]

    def forward(self, inputs: dict[str, Any], config: Mapping[str, Any],
                ctx: RunContext) -> dict[str, Any]:
        self._choices(inputs)
        module = self.module(config[self.policy_param])
        if ctx.sampling is not None and ctx.sampling.temperature > 0:
            return self.sample(module, inputs, ctx.rng, ctx.sampling.temperature)
        with torch.no_grad():
            s = self.scores(module, inputs).tolist()
        return self._pick(inputs, max(range(len(s)), key=lambda i: (s[i], -i)))


def _index(value: Any, n: int, name: str) -> int:
    try:
        k = int(value)
    except (TypeError, ValueError):
        k = -1
    if not 0 <= k < n:
        raise ConfigError(f"decider {name!r}: output {value!r} is not an index into its {n} "
                          "candidates")
    return k

