"""One torch thread for the rewards' small models and the frozen encoder.

Two reasons. Speed: a head is tiny, and on busy cores the thread hand-offs cost more than the
math (an 80-pair fit took 25 s with 2 threads, 0.9 s with 1). Reproducibility: a float sum
split over threads adds in another order, so the MiniLM encoder's embeddings differ in the
last bits between 1 and 2 threads; a near-tie downstream then flips, and a replay seed gave
another result in a worker process (one thread) than in the main one (two).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Run torch on one intra-op thread, then put the caller's setting back. With torch's
    OpenMP backend the setting belongs to the calling thread once it has set it, so callers
    on other threads (a runtime's workers) each set and restore their own. A thread's first
    torch call copies the last setting made anywhere, so a thread that starts using torch while
    another is inside this block may keep one thread: slower, never a different result."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
