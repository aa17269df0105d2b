"""The encoder's embeddings do not depend on torch's thread count, on the main thread or on a
runtime's worker threads; ``single_thread`` puts the caller's setting back."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from coalign.rewards import single_thread
from tests.rewards_support import minilm

# unpinned, 2,958 of these 200 texts x 384 values differed between 1 and 2 threads here
TEXTS = [f"user liked item {i} about space operas and heist films, number {i * 7}"
         for i in range(200)]


def _encode(threads: int) -> np.ndarray:
    torch.set_num_threads(threads)
    return minilm()._encode(TEXTS)  # past the cache: each call runs the model


def test_minilm_embeddings_are_the_same_on_one_or_two_threads() -> None:
    before = torch.get_num_threads()
    try:
        one, two = _encode(1), _encode(2)
        assert torch.get_num_threads() == 2  # the encoder put the caller's setting back
        with ThreadPoolExecutor(2) as pool:  # as a runtime's workers call it
            on_workers = list(pool.map(_encode, [2, 2]))
    finally:
        torch.set_num_threads(before)
    assert np.array_equal(one, two)
    assert all(np.array_equal(one, e) for e in on_workers)


def test_single_thread_nests_and_restores() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with single_thread():
            with single_thread():
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
