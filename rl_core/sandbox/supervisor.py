"""Running one spawned program to its end: its output read as it comes (tails kept, in bounded memory), the
lines of its marker channel collected, the wall clock and the scratch cap enforced, and every process it
left killed."""

from __future__ import annotations

import contextlib
import math
import os
import selectors
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_core.instrument import MARKER_PREFIX
from rl_core.sandbox.command import PROGRAM_NAME
from rl_core.sandbox.host import kill_uid

if TYPE_CHECKING:
    from rl_core.sandbox import ExecutionRequest, Isolation
    from rl_core.sandbox.channel import MarkerChannel

SCRATCH_CHECK_S = 0.5
MAX_SCRATCH_ENTRIES = 100_000
MAX_MARKER_LINES = 4096
DRAIN_S = 1.0
"""After the program exits, how long to keep reading output that descendants may still write."""


class _Tail:
    """The last `cap` bytes of a stream, in memory bounded by 2 x cap."""

    def __init__(self, cap: int) -> None:
        self.cap, self.buffer, self.total = cap, bytearray(), 0

    def feed(self, data: bytes) -> None:
        self.buffer += data
        self.total += len(data)
        if len(self.buffer) > 2 * self.cap:
            del self.buffer[: -self.cap]

    def text(self) -> str:
        kept = bytes(self.buffer[-self.cap :]) if self.cap > 0 else b""
        omitted = self.total - len(kept)
        head = f"[... {omitted} earlier bytes not kept ...]\n" if omitted else ""
        return head + kept.decode("utf-8", errors="replace")


class _MarkerLines:
    """Distinct lines containing MARKER_PREFIX, found as the marker channel's stream passes (a partial line
    carries over)."""

    PARTIAL_CAP = 4096

    def __init__(self) -> None:
        self.partial, self.lines = b"", dict[str, None]()
        self.prefix = MARKER_PREFIX.encode()

    def feed(self, data: bytes) -> None:
        window = self.partial + data
        if self.prefix not in window:
            self.partial = window[window.rfind(b"\n") + 1 :][-self.PARTIAL_CAP :]
            return
        *complete, last = window.split(b"\n")
        for line in complete:
            self._keep(line)
        self.partial = last[-self.PARTIAL_CAP :]

    def _keep(self, line: bytes) -> None:
        if self.prefix in line and len(self.lines) < MAX_MARKER_LINES:
            self.lines.setdefault(line[-512:].decode("utf-8", errors="replace").strip(), None)

    def result(self) -> tuple[str, ...]:
        self._keep(self.partial)
        return tuple(self.lines)


@dataclass(frozen=True)
class Ended:
    """How the spawned process ended, as the supervisor saw it."""

    exit_code: int | None  # os.waitstatus_to_exitcode: -N for signal N
    cpu_s: float
    duration_s: float
    timed_out: bool
    over_scratch: bool
    cancelled: bool = False


class Supervisor:
    """Runs one spawned process to its end: reads output, enforces the wall clock and the scratch cap."""

    def __init__(self, request: ExecutionRequest, isolation: Isolation, uid: int | None) -> None:
        self.request, self.isolation, self.uid = request, isolation, uid
        self.stdout, self.stderr = _Tail(request.max_output_bytes), _Tail(request.max_output_bytes)
        self.markers = _MarkerLines()
        self.timed_out = self.over_scratch = self.killed = self.cancelled = False
        self.wait: tuple[int, float] | None = None  # (wait status, cpu seconds) once reaped
        self.end = math.inf

    def run(self, argv: list[str], env: dict[str, str], channel: MarkerChannel | None = None) -> Ended:
        self.start = time.monotonic()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=self.request.work_dir,
            start_new_session=True,
            pass_fds=(channel.child_fd,) if channel is not None else (),
        )
        streams: list[tuple[Any, Callable[[bytes], None]]] = [
            (self.proc.stdout, self.stdout.feed),
            (self.proc.stderr, self.stderr.feed),
        ]
        if channel is not None:
            channel.spawned()
            streams.append((channel.ours, self.markers.feed))
        with selectors.DefaultSelector() as selector:
            try:
                for stream, sink in streams:
                    os.set_blocking(stream.fileno(), False)
                    selector.register(stream, selectors.EVENT_READ, sink)
                self._loop(selector)
            finally:
                self._finish()
        assert self.wait is not None
        status, cpu_s = self.wait
        killed_by_us = self.killed and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        return Ended(
            None if killed_by_us else os.waitstatus_to_exitcode(status),
            cpu_s,
            min(self.end, self.start + self.request.timeout_s) - self.start,
            self.timed_out,
            self.over_scratch,
            self.cancelled,
        )

    def _loop(self, selector: selectors.BaseSelector) -> None:
        """Read output until the process has been reaped and its output drained (or DRAIN_S has passed)."""
        deadline, next_check, drain_until = (
            self.start + self.request.timeout_s,
            self.start + SCRATCH_CHECK_S,
            math.inf,
        )
        while True:
            if self.wait is None and self._poll_exit():
                drain_until = time.monotonic() + DRAIN_S
            now = time.monotonic()
            if self.wait is not None:
                if not selector.get_map() or now >= drain_until:
                    return
                wake = drain_until
            else:
                if now >= deadline and not self.killed:
                    self.timed_out = True
                    self._kill()
                if self.request.cancel is not None and self.request.cancel.is_set() and not self.killed:
                    self.cancelled = True
                    self._kill()
                if now >= next_check:
                    self.over_scratch = self.over_scratch or scratch_over(self.request)
                    if self.over_scratch:
                        self._kill()
                    next_check = now + SCRATCH_CHECK_S
                wake = now + 0.01 if self.killed else min(deadline, next_check)
            self._read(
                selector, min(max(0.0, wake - now), 0.05)
            )  # 50 ms: notice an exit with pipes held open

    def _read(self, selector: selectors.BaseSelector, timeout_s: float) -> None:
        if not selector.get_map():
            time.sleep(min(timeout_s, 0.005))
            return
        for key, _ in selector.select(timeout_s):
            try:
                data = os.read(key.fd, 65536)
            except BlockingIOError:
                continue
            except OSError:  # a reset channel ends like a closed one
                data = b""
            if data:
                key.data(data)
            else:
                selector.unregister(key.fd)

    def _poll_exit(self) -> bool:
        """Reap the process if it has exited, after killing what it left (its zombie still holds the pgid)."""
        if os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            return False
        self.end = min(self.end, time.monotonic())
        self._kill_leftovers()
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.wait = (status, usage.ru_utime + usage.ru_stime)
        return True

    def _kill(self) -> None:
        if not self.killed:
            self.killed = True
            self.end = time.monotonic()
            self._kill_leftovers()

    def _kill_leftovers(self) -> None:
        """SIGKILL the process group (under bwrap: the PID namespace's init, so all inside), and the uid."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.uid is not None:
            kill_uid(self.uid)

    def _finish(self) -> None:
        if self.wait is None:
            self._kill()
            while not self._poll_exit():
                time.sleep(0.01)
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()  # type: ignore[union-attr]


def scratch_usage(work_dir: Path) -> tuple[int, int]:
    """(bytes in regular files, number of entries) under work_dir, not following links, skipping ./input
    and program.py (what the program itself wrote counts).

    Stops counting at MAX_SCRATCH_ENTRIES + 1 entries.
    """
    total, entries, stack = 0, 0, [work_dir]
    while stack and entries <= MAX_SCRATCH_ENTRIES:
        folder = stack.pop()
        try:
            listing = list(os.scandir(folder))
        except OSError:
            continue
        for entry in listing:
            if folder == work_dir and entry.name in ("input", PROGRAM_NAME):
                continue
            entries += 1
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
            elif stat.S_ISDIR(info.st_mode):
                stack.append(Path(entry.path))
    return total, entries


def scratch_over(request: ExecutionRequest) -> bool:
    total, entries = scratch_usage(request.work_dir)
    return total > request.max_file_mb * 2**20 or entries > MAX_SCRATCH_ENTRIES
