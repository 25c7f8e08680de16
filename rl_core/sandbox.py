"""Run one untrusted program and report what happened.

`execute(request)` writes the program to ``work_dir/program.py`` and runs it as a fresh process with the
worker's own Python interpreter, under one of two isolation levels, detected once per process
(`isolation_level()`) and recorded on every result:

``"bwrap"`` (bubblewrap works here). Covered:
  - namespaces: its own network namespace (only a loopback with nothing listening: no database, broker,
    web server or internet), its own PID namespace (``/proc`` lists only the program's processes; its
    parent is the sandbox's init, which it cannot signal), and its own IPC, UTS and cgroup namespaces;
  - a filesystem of only what Python and the ML stack need, read-only: ``/usr``, ``/lib*``, the
    interpreter's prefixes (the venv and its base), ``/etc/ld.so.cache`` and two more harmless files of
    ``/etc``. The competition's public files are bound read-only at ``./input``; the scratch dir
    ``work_dir`` is the writable working directory (also bound at ``/tmp``, so temporary files count
    against the scratch cap), with ``./submission``. ``/work``, ``/root``, the data dir, other attempts'
    dirs, the host's ``/tmp`` and the hidden answers do not exist inside. ``/dev`` is a minimal one with a
    size-capped ``/dev/shm``;
  - an empty environment apart from PATH, HOME, LANG, PYTHONHASHSEED, thread counts and a few more
    (`_program_env`): no DATABASE_URL, SECRET_KEY or anything else the worker holds;
  - an unprivileged user. Running as root, the sandbox switches the program to a uid of its own
    (``setpriv``, one uid per concurrent attempt, from `UID_RANGE`) with no capabilities and
    ``no_new_privs``. This is what makes RLIMIT_NPROC work: the kernel counts processes per real uid
    and never limits uid 0, and bwrap's user namespace would map the program back to uid 0. As a
    non-root worker, bwrap's user namespace is used instead (the kernel, since 5.14, counts RLIMIT_NPROC
    per user namespace);
  - rlimits (``prlimit``, before anything runs): address space (``memory_mb``), CPU seconds
    (a backstop: wall-clock limit x CPUs), file size (``max_file_mb``), processes (``max_processes``),
    open files, no core dumps;
  - a wall-clock limit that kills the whole tree: SIGKILL to bwrap's process group; the PID namespace's
    init dies with it and the kernel kills every process left inside, including ``setsid`` daemons;
    the same happens when the program exits and leaves children behind. As root, every process of the
    attempt's uid is also killed directly, and `execute` returns only once none of them runs; as a
    non-root worker the namespace's teardown may still be finishing when `execute` returns;
  - output: stdout and stderr are read as they come and only the last ``max_output_bytes`` of each are
    kept, so a program printing forever cannot exhaust the worker's memory. Lines that carry a stage
    marker (`rl_core.instrument.MARKER_PREFIX`) are kept apart (distinct lines, at most `MAX_MARKER_LINES`),
    so a long output cannot push them out of the tail;
  - scratch size: RLIMIT_FSIZE per file, and the scratch dir's total (bytes in regular files, plus a cap
    on the number of entries) is checked every `SCRATCH_CHECK_S` while the program runs and once after;
    over the cap the program is killed. The overshoot is bounded by the write rate times the check interval;
  - the submission is reported only when ``submission/submission.csv`` is a regular file inside the
    scratch dir (a symlink to the answers, or a ``submission`` directory replaced by a link, is ignored).

``"rlimits"`` (no working bwrap; a warning is logged once). Covered: the same rlimits, wall-clock kill of
the process group, output caps, scratch cap, scrubbed environment, a private temp dir inside the scratch
dir, ``./input`` as a private copy (hard links where possible) of the public files, and, as root, the
per-attempt uid (so the program cannot read other processes' environments or signal them, and every
process left under its uid is killed when it ends). Not covered: the filesystem is the host's (anything
world-readable is readable, including the answers if their permissions allow it), the network is the
host's, other processes are visible, and a non-root worker's program runs as the worker's own user (it
can read the worker's environment through ``/proc`` and signal it; ``setsid`` children may outlive it).

How the status is decided (first match wins):
  1. ``"timeout"``: the wall-clock limit was reached (and the sandbox killed it), or the CPU-seconds
     rlimit killed it (SIGXCPU, or SIGKILL with the CPU time at the limit). ``duration_s`` is the limit.
  2. ``"killed"``: the sandbox killed it for exceeding the scratch cap, or because its caller cancelled
     it (``ExecutionRequest.cancel`` was set).
  3. ``"memory"``: it exited non-zero or by a signal and its stderr tail shows an allocation failure
     (``MemoryError``, ``std::bad_alloc``, "Cannot allocate memory", "out of memory"), or it was
     SIGKILLed by someone other than the sandbox (the kernel's OOM killer).
  4. ``"killed"``: another signal ended it (SIGSEGV, SIGABRT, SIGTERM, ...). Under bwrap a signal shows
     as exit code 128 + N, so a program calling ``sys.exit(137)`` reads as SIGKILL.
  5. ``"error"``: any other non-zero exit code.
  6. ``"ok"``: exit code 0.

Not covered at any level: GPU memory isolation between concurrent attempts (``allow_gpu`` binds the
``/dev/nvidia*`` nodes); total memory of a process tree (RLIMIT_AS is per process: up to
``max_processes`` x ``memory_mb`` of virtual memory, not a cgroup limit); disk bandwidth; CPU share
between concurrent attempts; side channels; kernel exploits; nested user namespaces when running as root;
a program that reads its own source to learn the marker nonce.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import math
import os
import re
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rl_core.instrument import MARKER_PREFIX

logger = logging.getLogger(__name__)

Status = Literal["ok", "error", "timeout", "memory", "killed"]
Isolation = Literal["bwrap", "rlimits"]

SANDBOX_ROOT = "/attempt"
"""Where the scratch dir appears inside bwrap (the program's working directory and HOME)."""
PROGRAM_NAME = "program.py"
SUBMISSION = Path("submission") / "submission.csv"
UID_RANGE = range(200_000, 260_000)
"""Uids given to programs when the worker runs as root; no account on the host should use them."""
SCRATCH_CHECK_S = 0.5
MAX_SCRATCH_ENTRIES = 100_000
MAX_MARKER_LINES = 4096
SHM_FRACTION = 4
"""/dev/shm inside bwrap is a tmpfs of memory_mb / SHM_FRACTION (it is RAM outside RLIMIT_AS)."""
LEFTOVER_WAIT_S = 10.0
"""How long, at most, `execute` waits for the kernel to finish killing a program's processes."""
DRAIN_S = 1.0
"""After the program exits, how long to keep reading output that descendants may still write."""
_MEMORY_PATTERN = re.compile(r"\bMemoryError\b|std::bad_alloc|Cannot allocate memory|[Oo]ut of memory")
_FALLBACK_MAIN = (
    "__file__ = 'program.py'; __import__('sys').argv[:] = [__file__]; "
    "exec(compile(open(__file__, 'rb').read(), __file__, 'exec'))"
)
"""How the fallback starts program.py: Python would open it by its absolute path, whose parent dirs the
program's uid may not be allowed to traverse; a relative open from the working directory needs no such
right."""
_ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives")


@dataclass(frozen=True)
class ExecutionRequest:
    """One program to run.

    Attributes:
        program: the Python source to run (already instrumented).
        input_dir: the competition's public files; the program sees them read-only at ``./input``.
        work_dir: a fresh scratch dir (created if missing; ``submission/submission.csv`` must not exist).
        timeout_s: wall-clock limit in seconds.
        memory_mb: address-space limit per process, MiB (virtual memory: importing the whole ML stack
            takes about 1 GiB of it).
        max_output_bytes: how much of the end of stdout and of stderr is kept, each.
        max_file_mb: largest file the program may write (RLIMIT_FSIZE), and the scratch dir's total cap.
        max_processes: processes and threads of the program's uid (RLIMIT_NPROC).
        allow_gpu: bind ``/dev/nvidia*`` (when present) into the sandbox.
    """

    program: str
    input_dir: Path
    work_dir: Path
    timeout_s: float
    memory_mb: int
    max_output_bytes: int = 1_000_000
    max_file_mb: int = 512
    max_processes: int = 256
    allow_gpu: bool = False
    cancel: threading.Event | None = field(default=None, compare=False)
    """Set it (from another thread) to kill the program now: it ends with status ``killed``."""


@dataclass(frozen=True)
class ExecutionResult:
    """What happened. `status` is decided as the module docstring says.

    Attributes:
        status: ``ok | error | timeout | memory | killed``.
        exit_code: the program's exit code, 128 + N for signal N under bwrap, -N in the fallback;
            None when the sandbox killed it.
        duration_s: the program's wall-clock seconds (the limit itself for a timeout).
        stdout, stderr: the last ``max_output_bytes`` of each (UTF-8, undecodable bytes replaced);
            the sandbox appends a ``[sandbox] ...`` line to stderr when it killed the program.
        submission_path: ``work_dir/submission/submission.csv`` when the program wrote it as a regular file.
        isolation: the isolation level it ran under.
        marker_lines: the distinct stdout lines containing the stage-marker prefix, in order of arrival.
    """

    status: Status
    exit_code: int | None
    duration_s: float
    stdout: str
    stderr: str
    submission_path: Path | None
    isolation: Isolation
    marker_lines: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------- detection


@functools.cache
def isolation_level() -> Isolation:
    """``"bwrap"`` when a minimal bubblewrap sandbox starts here, else ``"rlimits"`` (warned once)."""
    if shutil.which("bwrap") is not None:
        probe = [_tool("bwrap"), *_namespace_flags(), *_system_binds(), "--proc", "/proc", "--dev", "/dev"]
        probe += ["--size", str(2**20), "--tmpfs", "/dev/shm", "--", _tool("true")]
        try:
            if subprocess.run(probe, capture_output=True, timeout=30, env={}).returncode == 0:
                return "bwrap"
        except (OSError, subprocess.TimeoutExpired):
            pass
    logger.warning(
        "bubblewrap is not usable here: programs run with rlimits, a scrubbed environment and a private "
        "temp dir only (no filesystem, network or PID isolation)."
    )
    return "rlimits"


@functools.cache
def _tool(name: str) -> str:
    """The absolute path of a util-linux or bubblewrap executable."""
    path = shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
    if path is None:
        raise RuntimeError(f"The sandbox needs `{name}` (Debian packages util-linux, procps, bubblewrap).")
    return path


def _is_root() -> bool:
    return os.geteuid() == 0


def _namespace_flags() -> list[str]:
    flags = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not _is_root():
        flags.append("--unshare-user")
    return [*flags, "--die-with-parent", "--new-session"]


# ---------------------------------------------------------------------------------------------- uids

UID_LOCK_DIR = Path(tempfile.gettempdir()) / "practicum-sandbox-uids"
"""One lock file per uid in use. flock is what makes a uid exclusive across the worker processes of a
host (Celery's prefork children, several workers) and not just across the threads of one."""
_uid_locks: dict[int, int] = {}
_uids_lock = threading.Lock()


def _acquire_uid() -> int | None:
    """A uid from UID_RANGE that no other attempt on this host is using; None when not root."""
    if not _is_root():
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


def _release_uid(uid: int | None) -> None:
    """Call this once the uid's processes are gone: it makes the uid available to the next attempt."""
    with _uids_lock:
        fd = _uid_locks.pop(uid, None)  # type: ignore[arg-type]
    if fd is not None:
        os.close(fd)  # closing the only descriptor releases the flock


def _setpriv(uid: int) -> list[str]:
    return [_tool("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]


def _kill_uid(uid: int) -> None:
    """SIGKILL every process running under `uid` and wait until none of them runs any more.

    kill(-1) as that uid reaches exactly those, in the program's PID namespace too. Dying takes the kernel
    a while (a fork bomb's hundreds of processes, on a busy machine), so the kill is repeated until
    `_live_processes_of(uid)` is empty; after LEFTOVER_WAIT_S it gives up and logs what is left.
    """
    deadline = time.monotonic() + LEFTOVER_WAIT_S
    while True:
        subprocess.run(
            [*_setpriv(uid), _tool("kill"), "-KILL", "-1"], capture_output=True, timeout=30, env={}
        )
        if not (left := _live_processes_of(uid)):
            return
        if time.monotonic() >= deadline:
            logger.error(
                "Processes of sandbox uid %d survived SIGKILL for %g s: %s", uid, LEFTOVER_WAIT_S, left
            )
            return
        time.sleep(0.02)


def _live_processes_of(uid: int) -> list[int]:
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


# ---------------------------------------------------------------------------------------------- layout


def _prepare_work_dir(request: ExecutionRequest, uid: int | None, isolation: Isolation) -> None:
    """Create the scratch layout; the program's uid owns the dirs it may write, root keeps program.py."""
    work = request.work_dir
    if not request.input_dir.is_dir():
        raise ValueError(f"input_dir {request.input_dir} is not a directory.")
    work.mkdir(parents=True, exist_ok=True)
    if (work / SUBMISSION).exists():
        raise ValueError(f"{work / SUBMISSION} already exists: each attempt needs a fresh work_dir.")
    (work / PROGRAM_NAME).write_text(request.program, encoding="utf-8")
    for name in ("submission", "tmp"):
        (work / name).mkdir(exist_ok=True)
    if isolation == "bwrap":
        (work / "input").mkdir(exist_ok=True)  # the mount point of the read-only public files
    else:
        _copy_inputs(request.input_dir, work / "input", link=uid is not None)
    if uid is not None:
        for path in (work, work / "submission", work / "tmp"):
            os.chown(path, uid, uid)


def _copy_inputs(source: Path, target: Path, *, link: bool) -> None:
    """A private copy of the public files; hard links (root-owned, so read-only to the program) if allowed."""

    def link_or_copy(src: str, dst: str) -> None:
        try:
            os.link(src, dst) if link else shutil.copy2(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link_or_copy, dirs_exist_ok=True)


def _interpreter() -> str:
    """This Python as an absolute path without `..` or `.` parts (symlinks kept, so a venv stays a venv): a
    worker started as `bench/../.venv/bin/python` must not name a folder the sandbox does not have."""
    return os.path.normpath(os.path.abspath(sys.executable))


def _python_roots() -> list[str]:
    """The interpreter's prefixes outside /usr (the venv and its base), outermost only."""
    executable_prefix = str(Path(os.path.realpath(sys.executable)).parent.parent)
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, executable_prefix}
    roots = sorted(r for r in map(os.path.realpath, found) if r != "/usr" and not r.startswith("/usr/"))
    return [r for r in roots if not any(r != o and r.startswith(o + "/") for o in roots)]


def _system_binds() -> list[str]:
    """Read-only binds of /usr, /lib*, /bin, /sbin (symlinks kept as symlinks) and a few /etc files."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in _ETC_FILES:
        args += ["--ro-bind-try", path, path]
    return args


def _python_binds() -> list[str]:
    """Binds of the interpreter's roots, with world-readable parents (bwrap would make them 0700)."""
    args: list[str] = []
    for root in _python_roots():
        for parent in reversed(Path(root).parents[:-1]):
            args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", root, root]
    return args


def _gpu_binds(allow_gpu: bool, devices_dir: Path = Path("/dev")) -> list[str]:
    """Device binds of the NVIDIA nodes (nvidia0, nvidiactl, nvidia-uvm, nvidia-caps/...) when allowed."""
    if not allow_gpu:
        return []
    devices = sorted(str(p) for p in devices_dir.glob("nvidia*"))
    return [arg for device in devices for arg in ("--dev-bind", device, device)]


def _bwrap_command(request: ExecutionRequest, env: dict[str, str]) -> list[str]:
    work, shm_bytes = str(request.work_dir), max(request.memory_mb // SHM_FRACTION, 16) * 2**20
    args = [_tool("bwrap"), *_namespace_flags(), "--hostname", "sandbox"]
    if _is_root():
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    args += [*_system_binds(), "--proc", "/proc", "--dev", "/dev"]
    args += ["--perms", "1777", "--size", str(shm_bytes), "--tmpfs", "/dev/shm"]
    args += ["--bind", work, SANDBOX_ROOT, "--ro-bind", str(request.input_dir), f"{SANDBOX_ROOT}/input"]
    args += ["--bind", f"{work}/tmp", "/tmp", *_gpu_binds(request.allow_gpu)]
    args += _python_binds()  # last: an interpreter installed under /tmp must not be hidden by the /tmp bind
    args += ["--chdir", SANDBOX_ROOT, "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args


def _cpu_limit_s(request: ExecutionRequest) -> int:
    """The CPU-seconds rlimit: a backstop behind the wall clock that lets every core stay busy."""
    return math.ceil(request.timeout_s * (os.cpu_count() or 1)) + 1


def _rlimit_command(request: ExecutionRequest) -> list[str]:
    cpu_s = _cpu_limit_s(request)
    return [
        _tool("prlimit"),
        f"--as={request.memory_mb * 2**20}",
        f"--cpu={cpu_s}:{cpu_s + 5}",
        f"--fsize={request.max_file_mb * 2**20}",
        f"--nproc={request.max_processes}",
        "--nofile=1024",
        "--core=0",
        "--",
    ]


def _program_env(request: ExecutionRequest, isolation: Isolation) -> dict[str, str]:
    """The whole environment the program sees."""
    home = SANDBOX_ROOT if isolation == "bwrap" else str(request.work_dir)
    threads = str(len(os.sched_getaffinity(0)))
    env = {
        "PATH": f"{Path(_interpreter()).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": "/tmp" if isolation == "bwrap" else f"{home}/tmp",
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "MPLBACKEND": "Agg",
    }
    env |= {name: threads for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    if request.allow_gpu and "CUDA_VISIBLE_DEVICES" in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    return env


def _command(request: ExecutionRequest, isolation: Isolation, uid: int | None) -> tuple[list[str], dict]:
    """(argv, env for the spawned process): prlimit, then bwrap or nothing, then setpriv when root."""
    env = _program_env(request, isolation)
    switch_user = _setpriv(uid) if uid is not None else []
    if isolation == "bwrap":
        program = f"{SANDBOX_ROOT}/{PROGRAM_NAME}"
        return [
            *_rlimit_command(request),
            *_bwrap_command(request, env),
            "--",
            *switch_user,
            _interpreter(),
            program,
        ], {}
    return [*_rlimit_command(request), *switch_user, _interpreter(), "-c", _FALLBACK_MAIN], env


# ---------------------------------------------------------------------------------------------- capture


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
    """Distinct lines containing MARKER_PREFIX, found as the stream passes (a partial line carries over)."""

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


# ---------------------------------------------------------------------------------------------- supervision


@dataclass(frozen=True)
class _Ended:
    """How the spawned process ended, as the supervisor saw it."""

    exit_code: int | None  # os.waitstatus_to_exitcode: -N for signal N
    cpu_s: float
    duration_s: float
    timed_out: bool
    over_scratch: bool
    cancelled: bool = False


class _Supervisor:
    """Runs one spawned process to its end: reads output, enforces the wall clock and the scratch cap."""

    def __init__(self, request: ExecutionRequest, isolation: Isolation, uid: int | None) -> None:
        self.request, self.isolation, self.uid = request, isolation, uid
        self.stdout, self.stderr = _Tail(request.max_output_bytes), _Tail(request.max_output_bytes)
        self.markers = _MarkerLines()
        self.timed_out = self.over_scratch = self.killed = self.cancelled = False
        self.wait: tuple[int, float] | None = None  # (wait status, cpu seconds) once reaped
        self.end = math.inf

    def run(self, argv: list[str], env: dict[str, str]) -> _Ended:
        self.start = time.monotonic()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=self.request.work_dir,
            start_new_session=True,
        )
        with selectors.DefaultSelector() as selector:
            try:
                for stream, sink in (
                    (self.proc.stdout, self._on_stdout),
                    (self.proc.stderr, self.stderr.feed),
                ):
                    os.set_blocking(stream.fileno(), False)  # type: ignore[union-attr]
                    selector.register(stream, selectors.EVENT_READ, sink)  # type: ignore[arg-type]
                self._loop(selector)
            finally:
                self._finish()
        assert self.wait is not None
        status, cpu_s = self.wait
        killed_by_us = self.killed and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        return _Ended(
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
                    self.over_scratch = self.over_scratch or _scratch_over(self.request)
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
            data = os.read(key.fd, 65536)
            if data:
                key.data(data)
            else:
                selector.unregister(key.fd)

    def _on_stdout(self, data: bytes) -> None:
        self.stdout.feed(data)
        self.markers.feed(data)

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
            _kill_uid(self.uid)

    def _finish(self) -> None:
        if self.wait is None:
            self._kill()
            while not self._poll_exit():
                time.sleep(0.01)
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()  # type: ignore[union-attr]


def _scratch_usage(work_dir: Path) -> tuple[int, int]:
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


def _scratch_over(request: ExecutionRequest) -> bool:
    total, entries = _scratch_usage(request.work_dir)
    return total > request.max_file_mb * 2**20 or entries > MAX_SCRATCH_ENTRIES


# ---------------------------------------------------------------------------------------------- results


def decide_status(
    *,
    exit_code: int | None,
    timed_out: bool,
    over_scratch: bool,
    cpu_s: float,
    cpu_limit_s: float,
    stderr: str,
    isolation: Isolation,
    cancelled: bool = False,
) -> Status:
    """The status, by the rules of the module docstring.

    >>> decide_status(exit_code=1, timed_out=False, over_scratch=False, cpu_s=0.1, cpu_limit_s=9,
    ...               stderr="Traceback ...\\nMemoryError\\n", isolation="bwrap")
    'memory'
    >>> decide_status(exit_code=139, timed_out=False, over_scratch=False, cpu_s=0.1, cpu_limit_s=9,
    ...               stderr="", isolation="bwrap")
    'killed'
    """
    signum = _signal_of(exit_code, isolation)
    if timed_out or signum == signal.SIGXCPU or (signum == signal.SIGKILL and cpu_s >= cpu_limit_s - 0.5):
        return "timeout"
    if over_scratch or cancelled:
        return "killed"
    if exit_code != 0 and _MEMORY_PATTERN.search(stderr[-4000:]):
        return "memory"
    if signum == signal.SIGKILL:
        return "memory"
    if signum is not None:
        return "killed"
    return "ok" if exit_code == 0 else "error"


def _signal_of(exit_code: int | None, isolation: Isolation) -> int | None:
    if exit_code is None:
        return None
    if exit_code < 0:
        return -exit_code
    if isolation == "bwrap" and 128 < exit_code <= 128 + 64:
        return exit_code - 128
    return None


def _submission(work_dir: Path) -> Path | None:
    """work_dir/submission/submission.csv when it is a regular file really inside work_dir."""
    path = work_dir / SUBMISSION
    try:
        is_file = stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return None
    inside = Path(os.path.realpath(path)) == Path(os.path.realpath(work_dir)) / SUBMISSION
    return path if is_file and inside else None


def _note(request: ExecutionRequest, ended: _Ended) -> str:
    if ended.timed_out:
        return f"\n[sandbox] killed at the {request.timeout_s:g} s wall-clock limit\n"
    if ended.over_scratch:
        limits = f"{request.max_file_mb} MB or {MAX_SCRATCH_ENTRIES} entries"
        return f"\n[sandbox] killed: the scratch dir exceeded {limits}\n"
    if ended.cancelled:
        return "\n[sandbox] killed: the attempt was cancelled\n"
    return ""


def execute(request: ExecutionRequest) -> ExecutionResult:
    """Run `request.program` in the sandbox and report how it ended. Blocks until it has.

    Raises ValueError for a missing input_dir or a reused work_dir; never for anything the program does.
    """
    isolation = isolation_level()
    uid = _acquire_uid()
    try:
        _prepare_work_dir(request, uid, isolation)
        argv, env = _command(request, isolation, uid)
        supervisor = _Supervisor(request, isolation, uid)
        ended = supervisor.run(argv, env)
    finally:
        _release_uid(uid)
    if not ended.over_scratch and _scratch_over(request):
        ended = _Ended(ended.exit_code, ended.cpu_s, ended.duration_s, ended.timed_out, True, ended.cancelled)
    stderr = supervisor.stderr.text() + _note(request, ended)
    status = decide_status(
        exit_code=ended.exit_code,
        timed_out=ended.timed_out,
        over_scratch=ended.over_scratch,
        cancelled=ended.cancelled,
        cpu_s=ended.cpu_s,
        cpu_limit_s=_cpu_limit_s(request),
        stderr=stderr,
        isolation=isolation,
    )
    return ExecutionResult(
        status=status,
        exit_code=ended.exit_code,
        duration_s=request.timeout_s if status == "timeout" else ended.duration_s,
        stdout=supervisor.stdout.text(),
        stderr=stderr,
        submission_path=_submission(request.work_dir),
        isolation=isolation,
        marker_lines=supervisor.markers.result(),
    )


# ---------------------------------------------------------------------------------------------- retention


def prune_scratch(root: Path, *, keep_days: float, max_total_mb: float) -> list[Path]:
    """Delete attempt dirs (the direct subdirectories of `root`) older than `keep_days`, then the oldest
    others until the rest take at most `max_total_mb`. Links are never followed. Returns what was removed.

    Call this from a periodic task; attempts still running must not live under `root` with an old mtime.
    """
    if not root.is_dir():
        return []
    return prune_scratch_dirs(list(root.iterdir()), keep_days=keep_days, max_total_mb=max_total_mb)


def prune_scratch_dirs(candidates: list[Path], *, keep_days: float, max_total_mb: float) -> list[Path]:
    """`prune_scratch` over any set of attempt dirs (several runs' scratch roots at once, say)."""
    dirs = sorted((p for p in candidates if p.is_dir() and not p.is_symlink()), key=_mtime)
    cutoff, removed = time.time() - keep_days * 86400, []
    sizes = {p: _scratch_usage(p)[0] for p in dirs}
    total = sum(sizes.values())
    for path in dirs:
        if _mtime(path) >= cutoff and total <= max_total_mb * 2**20:
            continue
        shutil.rmtree(path, ignore_errors=True)
        total -= sizes[path]
        removed.append(path)
    return removed


def _mtime(path: Path) -> float:
    return path.lstat().st_mtime
