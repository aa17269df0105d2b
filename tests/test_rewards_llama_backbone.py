"""The task model's hidden state as a backbone, on the real bundled SmolLM2 GGUF."""

from __future__ import annotations

import numpy as np
import pytest

from coalign.errors import ConfigError
from coalign.pairs import PreferencePair
from coalign.rewards import LocalRewardModel, make_backbone
from coalign.rewards._cache import EmbeddingCache


@pytest.fixture(scope="module")
def backbone():
    return make_backbone("qwen", model="smollm2-135m", n_threads=1)


def test_embeddings_are_normalized_cached_and_tell_texts_apart(backbone):
    texts = ["def f(x):\n    return x + 1", "The capital of France is Paris.", "def f(x):\n"
             "    return x + 1"]
    rows = backbone.embed(texts)
    assert rows.shape == (3, backbone.dim) and rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)
    assert float(rows[0] @ rows[1]) < 0.99
    np.testing.assert_array_equal(rows[0], rows[2])
    assert backbone.encoded == 2  # the repeated text is encoded once
    assert backbone.id.startswith("llama:smollm2-135m:") and backbone.id.endswith(":mean")


def test_a_persistent_cache_serves_a_second_backbone(tmp_path):
    first = make_backbone("qwen", model="smollm2-135m", cache=EmbeddingCache(tmp_path))
    vec = first.embed(["a cached text"])
    first.cache.flush()
    second = make_backbone("qwen", model="smollm2-135m", cache=EmbeddingCache(tmp_path))
    np.testing.assert_array_equal(second.embed(["a cached text"]), vec)
    assert second.encoded == 0


def test_a_local_reward_trains_on_it(backbone):
    pairs = [PreferencePair("writer", f"e{i}", {"q": f"question {i}"},
                            {"draft": f"a careful answer to question {i}"},
                            {"draft": "no"}, 1.0, 0.0, "a") for i in range(8)]
    lrf = LocalRewardModel(backbone, {"writer": "writes the answer"})
    lrf.fit(pairs)
    assert lrf.compare(PreferencePair("writer", "x", {"q": "question 9"},
                                      {"draft": "a careful answer to question 9"},
                                      {"draft": "no"}, 1.0, 0.0, "a")) > 0


def test_an_unknown_model_is_one_line():
    with pytest.raises(ConfigError, match="nosuch"):
        make_backbone("qwen", model="nosuch-model")
