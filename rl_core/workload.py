"""What this process runs beside its LM sampler: the count of sandboxed programs running from it now.

`rl_core.sandbox.execute` counts each program while it runs (`PROGRAMS.running()`); an LM policy's vLLM
sampler reads the count before each decoding step and takes every core only while it is zero and the
learner is idle (`rl_core.policies.lm.cores`). Programs started by another process (a Celery sandbox worker)
are not counted here.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class Running:
    """A thread-safe count of things running now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Count one more while the block runs.

        >>> count = Running()
        >>> with count.running():
        ...     count.now()
        1
        >>> count.now()
        0
        """
        with self._lock:
            self._count += 1
        try:
            yield
        finally:
            with self._lock:
                self._count -= 1

    def now(self) -> int:
        return self._count


PROGRAMS = Running()
"""Sandboxed programs running from this process now."""
