"""How an LMPolicy shares a CPU's threads between decoding and learning, which overlap when the continuous
decoder samples its own copy of the weights while the learner updates the adapters (LMPolicy.sample)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch


class ThreadSplit:
    """The CPU threads of an LMPolicy's two streams of work, which overlap when a self-contained engine
    decodes outside the weights lock while the learner updates under it: while both run each gets half,
    alone all.

    Measured (bench/lm_overlap.py --quick, 2 runs per mode): a decode of 8 programs (17 s alone) and an
    update of 4 (9 s alone) on 2 cores took 0.92x their serial wall time overlapped with this split, and
    1.02x overlapped at 2 threads each (four busy threads on two cores contend).
    torch's thread count is process-wide: each stream sets it before its next step (the decoder) or pass (the
    learner's `score`), and both ask for the same count while both run, so whichever set it last is right.
    """

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.decoding = False

    def half(self) -> int:
        return max(1, self.threads // 2)

    @contextlib.contextmanager
    def decoder(self, learning: Callable[[], bool]) -> Iterator[Callable[[], int]]:
        """While a decode runs: the decoder's thread count, asked before each step (half while `learning()`,
        the learner holding the weights lock)."""
        self.decoding = True
        try:
            yield lambda: self.half() if learning() else self.threads
        finally:
            self.decoding = False

    def learner(self) -> int:
        """The learner's thread count for its next pass: half while a decode runs, else all."""
        return self.half() if self.decoding else self.threads


def use_threads(count: int) -> None:
    """Set torch's CPU thread count to `count` (nothing when it already is)."""
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
