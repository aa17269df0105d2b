"""Cheap task-agnostic features placed beside the embedding.

A frozen sentence embedding is weak at counting and at exact matching, yet output length and
whether the output is supported by the evidence often decide a QA reward (F1 punishes verbose
answers; an answer absent from the passages is usually wrong). These ten numbers expose that
directly. Each head standardizes them with statistics from its own training data.

| # | name | meaning |
|---|---|---|
| 0 | ``out_tokens`` | output word tokens / 100 |
| 1 | ``out_log_tokens`` | log(1 + output word tokens) |
| 2 | ``out_empty`` | 1 if the output has no word token |
| 3 | ``out_unknown`` | 1 if the output abstains ("unknown", "cannot", "not mentioned", …) |
| 4 | ``out_numeric`` | 1 if the output contains a digit |
| 5 | ``out_in_evidence`` | share of output tokens found in the evidence inputs |
| 6 | ``out_in_query`` | share of output tokens found in the query inputs |
| 7 | ``query_in_out`` | share of query tokens found in the output |
| 8 | ``out_span_in_evidence`` | 1 if the whole (normalized) output occurs in the evidence |
| 9 | ``evidence_log_tokens`` | log(1 + evidence word tokens) |
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from coalign.rewards._text import split_inputs, tokens, values_text

FEATURE_NAMES: tuple[str, ...] = (
    "out_tokens",
    "out_log_tokens",
    "out_empty",
    "out_unknown",
    "out_numeric",
    "out_in_evidence",
    "out_in_query",
    "query_in_out",
    "out_span_in_evidence",
    "evidence_log_tokens",
)
N_FEATURES = len(FEATURE_NAMES)

_ABSTAIN = re.compile(
    r"\b(unknown|not sure|cannot|can't|unable to|no answer|not enough information|"
    r"insufficient|not mentioned|not provided|n/a|i don't know)\b",
    re.IGNORECASE,
)


def _share(part: list[str], whole: set[str]) -> float:
    return sum(t in whole for t in part) / len(part) if part else 0.0


def features(inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> np.ndarray:
    """The feature vector (float32, length ``N_FEATURES``) of one (x_k, y_k)."""
    query, evidence = split_inputs(inputs)
    out_text = values_text(outputs)
    out_tok = tokens(out_text)
    query_tok = tokens(values_text(query))
    ev_tok = tokens(values_text(evidence))
    ev_set = set(ev_tok)
    joined_out = " ".join(out_tok)
    span = bool(out_tok) and f" {joined_out} " in f" {' '.join(ev_tok)} "
    return np.array(
        [
            len(out_tok) / 100.0,
            math.log1p(len(out_tok)),
            float(not out_tok),
            float(bool(_ABSTAIN.search(out_text))),
            float(any(ch.isdigit() for ch in out_text)),
            _share(out_tok, ev_set),
            _share(out_tok, set(query_tok)),
            _share(query_tok, set(out_tok)),
            float(span),
            math.log1p(len(ev_tok)),
        ],
        dtype=np.float32,
    )
