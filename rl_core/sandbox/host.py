"""The host side of the sandbox: the tools it runs, and the uids it gives programs when the worker is root.

A root worker runs each program under a uid of its own from `UID_RANGE` (what makes RLIMIT_NPROC bite and
lets every process of the attempt be killed at once); `acquire_uid` makes a uid exclusive on this host.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

logger = logging.getLogger(__name__)

UID_RANGE = range(200_000, 260_000)
"""Uids given to programs when the worker runs as root; no account on the host should use them."""
LEFTOVER_WAIT_S = 10.0
"""How long, at most, `kill_uid` waits for the kernel to finish killing a program's processes."""


@functools.cache
def tool(name: str) -> str:
    """The absolute path of a util-linux or bubblewrap executable."""
    path = shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
    if path is None:
        raise RuntimeError(f"The sandbox needs `{name}` (Debian packages util-linux, procps, bubblewrap).")
    return path


def is_root() -> bool:
    return os.geteuid() == 0


def namespace_flags() -> list[str]:
    flags = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not is_root():
        flags.append("--unshare-user")
    return [*flags, "--die-with-parent", "--new-session"]


UID_LOCK_DIR = Path(tempfile.gettempdir()) / "practicum-sandbox-uids"
"""One lock file per uid in use. flock is what makes a uid exclusive across the worker processes of a
host (Celery's prefork children, several workers) and not just across the threads of one."""
_uid_locks: dict[int, int] = {}
_uids_lock = threading.Lock()


def acquire_uid() -> int | None:
    """A uid from UID_RANGE that no other attempt on this host is using; None when not root."""
    if not is_root():
        return None
    UID_LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    while True:
        uid = UID_RANGE[secrets.randbelow(len(UID_RANGE))]
        fd = os.open(UID_LOCK_DIR / str(uid), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)  # held by another attempt, in this process or another
            continue
        with _uids_lock:
            _uid_locks[uid] = fd
        return uid


def release_uid(uid: int | None) -> None:
    """Call this once the uid's processes are gone: it makes the uid available to the next attempt."""
    with _uids_lock:
        fd = _uid_locks.pop(uid, None)  # type: ignore[arg-type]
    if fd is not None:
        os.close(fd)  # closing the only descriptor releases the flock


def setpriv(uid: int) -> list[str]:
    return [tool("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]


def kill_uid(uid: int) -> None:
    """SIGKILL every process running under `uid` and wait until none of them runs any more.

    kill(-1) as that uid reaches exactly those, in the program's PID namespace too. Dying takes the kernel
    a while (a fork bomb's hundreds of processes, on a busy machine), so the kill is repeated until
    `live_processes_of(uid)` is empty; after LEFTOVER_WAIT_S it gives up and logs what is left.
    """
    deadline = time.monotonic() + LEFTOVER_WAIT_S
    while True:
        subprocess.run([*setpriv(uid), tool("kill"), "-KILL", "-1"], capture_output=True, timeout=30, env={})
        if not (left := live_processes_of(uid)):
            return
        if time.monotonic() >= deadline:
            logger.error(
                "Processes of sandbox uid %d survived SIGKILL for %g s: %s", uid, LEFTOVER_WAIT_S, left
            )
            return
        time.sleep(0.02)


def live_processes_of(uid: int) -> list[int]:
    """Pids of the processes owned by `uid` that have not exited (zombies run nothing and are left out)."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            state = Path(entry.path, "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue  # it exited while we looked
        if state != "Z":
            pids.append(int(entry.name))
    return pids
