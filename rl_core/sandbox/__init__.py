"""Run one untrusted program and report what happened.

`execute(request)` writes the program to ``work_dir/program.py`` and runs it as a fresh process with the
worker's own Python interpreter, under one of three isolation levels, detected once per process
(`isolation_level()`) and recorded on every result:

``"bwrap"`` (bubblewrap works here). Covered:
  - namespaces: its own network namespace (only a loopback with nothing listening: no database, broker,
    web server or internet), its own PID namespace (``/proc`` lists only the program's processes; its
    parent is the sandbox's init, which it cannot signal), and its own IPC, UTS and cgroup namespaces;
  - a filesystem of only what Python and the ML stack need, read-only: ``/usr``, ``/lib*``, the
    interpreter's prefixes (the venv and its base), ``/etc/ld.so.cache`` and two more harmless files of
    ``/etc``. The competition's public files are bound read-only at ``./input``, through this attempt's
    own mirror of them (hard links beside ``work_dir``, removed afterwards; the shared folder itself where
    links cannot be made), so reads are observed (below); the scratch dir
    ``work_dir`` is the writable working directory (also bound at ``/tmp``, so temporary files count
    against the scratch cap), with ``./submission``. ``/work``, ``/root``, the data dir, other attempts'
    dirs, the host's ``/tmp`` and the hidden answers do not exist inside. ``/dev`` is a minimal one with a
    size-capped ``/dev/shm``;
  - an empty environment apart from PATH, HOME, LANG, PYTHONHASHSEED, thread counts and a few more
    (`command.program_env`): no DATABASE_URL, SECRET_KEY or anything else the worker holds;
  - an unprivileged user. Running as root, the sandbox switches the program to a uid of its own
    (``setpriv``, one uid per concurrent attempt, from `host.UID_RANGE`) with no capabilities and
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
    kept, so a program printing forever cannot exhaust the worker's memory;
  - stage markers (``marker_nonce`` set): a private channel (`channel.MarkerChannel`), never stdout; the
    program's marker function takes the nonce from it before the program runs, and the distinct lines
    that come back on it (at most `MAX_MARKER_LINES`) are the result's ``marker_lines``;
  - reads of the public files (`reads`): the kernel reports (inotify, outside the program) each file the
    program opens or reads through its mirror; they are the result's ``inputs_read`` (None where not
    observed), the evidence that data was loaded (rl_core.environment.confirmed);
  - scratch size: RLIMIT_FSIZE per file, and the scratch dir's total (bytes in regular files, plus a cap
    on the number of entries) is checked every `SCRATCH_CHECK_S` while the program runs and once after;
    over the cap the program is killed. The overshoot is bounded by the write rate times the check interval;
  - the submission is reported only when ``submission/submission.csv`` is a regular file inside the
    scratch dir (a symlink to the answers, or a ``submission`` directory replaced by a link, is ignored).

``"rlimits"`` (no working bwrap, a root worker; a warning is logged once). Covered: the same rlimits,
wall-clock kill of the process group, output caps, scratch cap, scrubbed environment, a private temp dir
inside the scratch dir, ``./input`` as a private copy (hard links) of the public files, whose reads are
observed as under bwrap, and the
per-attempt uid (so the program cannot read the 0600 answers or other processes' environments, nor signal
them, and every process left under its uid is killed when it ends). Not covered: the filesystem is the
host's (anything world-readable is readable), the network is the host's, other processes are visible.

``"unisolated"`` (no working bwrap, a non-root worker). As ``"rlimits"``, but the program runs as the
worker's own user: it can read the hidden answers (0600, but the worker's), the worker's environment
through ``/proc``, and signal the worker; ``setsid`` children may outlive it. Its scores are not
trustworthy, so `execute` refuses to run anything here (`UnisolatedRefused`) unless the operator opted in
with ``PRACTICUM_ALLOW_UNISOLATED`` (`allow_unisolated`).

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
a program that finds the marker nonce in its own memory (rl_core.instrument bounds what that can earn).

Where things are: this module holds the request, the result, isolation detection, the status rules and
`execute`; `command` builds the scratch layout and what is spawned; `supervisor` runs it to its end
(output capture, wall clock, scratch cap); `host` holds the tools and the per-attempt uids.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rl_core.sandbox.channel import MarkerChannel
from rl_core.sandbox.command import (
    SUBMISSION,
    build_command,
    cpu_limit_s,
    input_mirror,
    prepare_work_dir,
    system_binds,
    watched_inputs,
)
from rl_core.sandbox.host import acquire_uid, is_root, namespace_flags, release_uid, tool
from rl_core.sandbox.reads import ReadWatch
from rl_core.sandbox.supervisor import MAX_SCRATCH_ENTRIES, Ended, Supervisor, scratch_over, scratch_usage
from rl_core.workload import PROGRAMS

logger = logging.getLogger(__name__)

Status = Literal["ok", "error", "timeout", "memory", "killed"]
Isolation = Literal["bwrap", "rlimits", "unisolated"]
UNISOLATED_SETTING = "PRACTICUM_ALLOW_UNISOLATED"
_unisolated = {"allowed": False}


class UnisolatedRefused(RuntimeError):
    """Raised by `execute` where the sandbox is ``"unisolated"`` and the operator has not opted in."""


def allow_unisolated(allowed: bool) -> None:
    """Call this once at start-up with the operator's ``PRACTICUM_ALLOW_UNISOLATED`` (Django's runs app does):
    whether attempts may run where the sandbox cannot hide the answers from them."""
    _unisolated["allowed"] = allowed


def unisolated_allowed() -> bool:
    return _unisolated["allowed"]


def scores_trustworthy(isolation: str) -> bool:
    """Whether a program run under `isolation` could not have read the hidden answers.

    >>> scores_trustworthy("bwrap"), scores_trustworthy("unisolated")
    (True, False)
    """
    return isolation != "unisolated"


_MEMORY_PATTERN = re.compile(r"\bMemoryError\b|std::bad_alloc|Cannot allocate memory|[Oo]ut of memory")


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
    marker_nonce: str | None = None
    """The attempt's marker nonce: when set, the program gets a marker channel carrying it (see `channel`)."""
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
        marker_lines: the distinct lines that came back on the marker channel with the stage-marker prefix,
            in order of arrival (none without ``marker_nonce``). Whatever the program prints is not here.
        inputs_read: the public files (relative to ``./input``) the program opened or read, as the kernel
            reported them outside the program (`reads`); None where they could not be observed.
    """

    status: Status
    exit_code: int | None
    duration_s: float
    stdout: str
    stderr: str
    submission_path: Path | None
    isolation: Isolation
    marker_lines: tuple[str, ...] = ()
    inputs_read: tuple[str, ...] | None = None


@functools.cache
def isolation_level() -> Isolation:
    """``"bwrap"`` when a minimal bubblewrap sandbox starts here, else ``"rlimits"`` for a root worker and
    ``"unisolated"`` for any other (warned once)."""
    if shutil.which("bwrap") is not None:
        probe = [tool("bwrap"), *namespace_flags(), *system_binds(), "--proc", "/proc", "--dev", "/dev"]
        probe += ["--size", str(2**20), "--tmpfs", "/dev/shm", "--", tool("true")]
        try:
            if subprocess.run(probe, capture_output=True, timeout=30, env={}).returncode == 0:
                return "bwrap"
        except (OSError, subprocess.TimeoutExpired):
            pass
    logger.warning(
        "bubblewrap is not usable here: programs run with rlimits, a scrubbed environment and a private "
        "temp dir only (no filesystem, network or PID isolation)."
    )
    if is_root():
        return "rlimits"
    logger.warning(
        "This worker is not root: programs would run as its own user and could read the hidden answers. "
        "Attempts are refused unless %s=True (scores are then not trustworthy).",
        UNISOLATED_SETTING,
    )
    return "unisolated"


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


def _note(request: ExecutionRequest, ended: Ended) -> str:
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

    Raises ValueError for a missing input_dir or a reused work_dir, UnisolatedRefused where the sandbox
    cannot hide the answers and the operator has not opted in; never for anything the program does.
    """
    isolation = isolation_level()
    if not scores_trustworthy(isolation) and not unisolated_allowed():
        raise UnisolatedRefused(
            "Refusing to run the attempt: bubblewrap does not work here and the worker is not root, so the "
            "program would run as the worker's own user and could read the hidden answers. Fix the sandbox "
            f"(see README), run the worker as root, or set {UNISOLATED_SETTING}=True to run it anyway "
            "(its scores are then not trustworthy)."
        )
    channel = MarkerChannel.open(request.marker_nonce) if request.marker_nonce is not None else None
    uid, watch = acquire_uid(), None
    try:
        prepare_work_dir(request, uid, isolation)
        watched = watched_inputs(request, isolation)
        watch = ReadWatch(watched) if watched is not None else None
        argv, env = build_command(request, isolation, uid, channel.child_fd if channel else None)
        supervisor = Supervisor(request, isolation, uid)
        with PROGRAMS.running():  # an LM sampler of this process leaves the program its share of the cores
            ended = supervisor.run(argv, env, channel)
        inputs_read = watch.files_read() if watch is not None else None
    finally:
        release_uid(uid)
        if channel is not None:
            channel.close()
        if watch is not None:
            watch.close()
        shutil.rmtree(input_mirror(request.work_dir), ignore_errors=True)
    if not ended.over_scratch and scratch_over(request):
        ended = Ended(ended.exit_code, ended.cpu_s, ended.duration_s, ended.timed_out, True, ended.cancelled)
    stderr = supervisor.stderr.text() + _note(request, ended)
    status = decide_status(
        exit_code=ended.exit_code,
        timed_out=ended.timed_out,
        over_scratch=ended.over_scratch,
        cancelled=ended.cancelled,
        cpu_s=ended.cpu_s,
        cpu_limit_s=cpu_limit_s(request),
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
        inputs_read=inputs_read,
    )


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
    sizes = {p: scratch_usage(p)[0] for p in dirs}
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
