"""Embedding similarity to a known-good output (the reference's HBC baseline).

An output is judged by the cosine between its embedding and the embedding of a known-good output
for the same example (e.g. the gold answer), with no training and no view of the downstream reward.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from coalign.errors import DataError
from coalign.pairs import PreferencePair
from coalign.rewards._backbone import Backbone
from coalign.rewards._text import as_text, values_text


class EmbeddingSimilarityRanker:
    """Prefers the output whose embedding is nearer the example's reference output.

    Args:
        backbone: the encoder.
        references: example_id -> known-good output (an outputs mapping or plain text).
    """

    def __init__(self, backbone: Backbone, references: Mapping[str, Any]) -> None:
        self.backbone = backbone
        self.references = references

    def _text(self, value: Any) -> str:
        return values_text(value) if isinstance(value, Mapping) else as_text(value)

    def similarity(self, example_id: str, outputs: Mapping[str, Any]) -> float:
        if example_id not in self.references:
            raise DataError(
                f"embedding-similarity baseline: no known-good output for example {example_id!r}; "
                "pass one in references"
            )
        ref, out = self.backbone.embed(
            [self._text(self.references[example_id]), self._text(outputs)]
        )
        return float(np.dot(ref, out))  # rows are L2-normalized: the dot is the cosine

    def compare(self, pair: PreferencePair) -> float:
        return self.similarity(pair.example_id, pair.output_a) - self.similarity(
            pair.example_id, pair.output_b
        )
