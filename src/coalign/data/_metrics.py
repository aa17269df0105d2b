"""Answer metrics: HotpotQA-style normalization, token F1, exact match, label accuracy.

Every metric compares a prediction with a gold answer and optional aliases, scoring the best
match. ``get_metric`` wraps them as ``(prediction, example) -> float`` for optimizers.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from coalign.data._base import Example
from coalign.errors import ConfigError

__all__ = [
    "Metric",
    "accuracy",
    "exact_match",
    "extract_label",
    "f1_score",
    "get_metric",
    "metric_names",
    "normalize_answer",
]

Metric = Callable[[Any, Example], float]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
# Answers that HotpotQA scores all-or-nothing: partial token overlap with them means nothing.
_SPECIAL = frozenset({"yes", "no", "noanswer"})
_DEFAULT_LABELS = ("yes", "no", "maybe")


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation, drop the articles a/an/the, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _golds(gold: str, aliases: Iterable[str]) -> list[str]:
    return [gold, *(a for a in aliases if a != gold)]


def _f1_one(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    same = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, gold: str, aliases: Iterable[str] = ()) -> float:
    """Token-level F1 after normalization, maximized over ``gold`` and ``aliases``.

    As in the official HotpotQA script, if either side normalizes to yes/no/noanswer and the
    two differ, the score is 0 even when tokens overlap.
    """
    return max(_f1_one(prediction, g) for g in _golds(gold, aliases))


def exact_match(prediction: str, gold: str, aliases: Iterable[str] = ()) -> float:
    """1.0 if the normalized prediction equals the normalized gold or an alias, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _golds(gold, aliases)))


def extract_label(text: str, labels: Iterable[str] = _DEFAULT_LABELS) -> str | None:
    """The first word of ``text`` (normalized) that is one of ``labels``, or ``None``.

    Turns a free-text LLM reply such as "Yes, the trial shows..." into ``"yes"``.
    """
    wanted = {normalize_answer(label) for label in labels}
    return next((word for word in normalize_answer(text).split() if word in wanted), None)


def accuracy(
    prediction: str,
    gold: str,
    aliases: Iterable[str] = (),
    labels: Iterable[str] | None = None,
) -> float:
    """Label accuracy: 1.0 if the prediction names the gold label (or an alias), else 0.0.

    The whole normalized prediction is compared first; failing that, the first word that is
    a valid label is. ``labels`` defaults to yes/no/maybe when the gold is one of them, so a
    free-text "No, because ..." counts as "no"; otherwise only the whole-answer match applies.
    """
    golds = {normalize_answer(g) for g in _golds(gold, aliases)}
    pred = normalize_answer(prediction)
    if pred in golds:
        return 1.0
    if labels is None:
        labels = _DEFAULT_LABELS if golds & set(_DEFAULT_LABELS) else ()
    return float(extract_label(prediction, labels) in golds)


def _as_text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else str(value)


def _on_example(score: Callable[[str, str, Iterable[str]], float]) -> Metric:
    def metric(prediction: Any, example: Example) -> float:
        aliases = [_as_text(a) for a in example.meta.get("answer_aliases", ())]
        return score(_as_text(prediction), _as_text(example.target), aliases)

    metric.__name__ = score.__name__
    metric.__doc__ = f"{score.__name__} of a prediction against an Example's target + aliases."
    return metric


_REGISTRY: Mapping[str, Metric] = MappingProxyType(
    {"f1": _on_example(f1_score), "em": _on_example(exact_match), "accuracy": _on_example(accuracy)}
)


def metric_names() -> list[str]:
    """Names accepted by ``get_metric``."""
    return sorted(_REGISTRY)


def get_metric(name: str) -> Metric:
    """The metric ``(prediction, example) -> float`` registered under ``name``.

    Aliases are read from ``example.meta["answer_aliases"]`` when present.

    Raises:
        ConfigError: unknown name (the message lists the valid ones).
    """
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"metric: unknown name {name!r}; choose one of {', '.join(metric_names())}"
        ) from None
