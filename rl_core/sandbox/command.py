"""What the sandbox spawns: the scratch dir's layout, and the command line and environment of a program
under each isolation level (prlimit, then bwrap or nothing, then setpriv when root)."""

from __future__ import annotations

import math
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rl_core.instrument.markers import CHANNEL_ENV
from rl_core.sandbox.host import is_root, namespace_flags, setpriv, tool
from rl_core.sandbox.reads import mirror_inputs

if TYPE_CHECKING:
    from rl_core.sandbox import ExecutionRequest, Isolation

SANDBOX_ROOT = "/attempt"
"""Where the scratch dir appears inside bwrap (the program's working directory and HOME)."""
PROGRAM_NAME = "program.py"
SUBMISSION = Path("submission") / "submission.csv"
SHM_FRACTION = 4
"""/dev/shm inside bwrap is a tmpfs of memory_mb / SHM_FRACTION (it is RAM outside RLIMIT_AS)."""
_FALLBACK_MAIN = (
    "__file__ = 'program.py'; __import__('sys').argv[:] = [__file__]; "
    "exec(compile(open(__file__, 'rb').read(), __file__, 'exec'))"
)
"""How the fallback starts program.py: Python would open it by its absolute path, whose parent dirs the
program's uid may not be allowed to traverse; a relative open from the working directory needs no such
right."""
_ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives")


def prepare_work_dir(request: ExecutionRequest, uid: int | None, isolation: Isolation) -> None:
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
        mirror_inputs(request.input_dir, input_mirror(work))  # this attempt's own view, watched for reads
    else:
        _copy_inputs(request.input_dir, work / "input", link=uid is not None)
    if uid is not None:
        for path in (work, work / "submission", work / "tmp"):
            os.chown(path, uid, uid)


def input_mirror(work: Path) -> Path:
    """Where an isolated attempt's private mirror of the public files lives: beside its scratch folder, so
    the program sees it only through the read-only mount (reads.mirror_inputs)."""
    return work.with_name(work.name + ".input")


def watched_inputs(request: ExecutionRequest, isolation: Isolation) -> Path | None:
    """The folder the program reads the public files through, when it is this attempt's alone: the mirror
    (bwrap) or the private copy (the fallbacks); None when the attempt reads the shared folder itself."""
    folder = input_mirror(request.work_dir) if isolation == "bwrap" else request.work_dir / "input"
    return folder if folder.is_dir() else None


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


def system_binds() -> list[str]:
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


def gpu_binds(allow_gpu: bool, devices_dir: Path = Path("/dev")) -> list[str]:
    """Device binds of the NVIDIA nodes (nvidia0, nvidiactl, nvidia-uvm, nvidia-caps/...) when allowed."""
    if not allow_gpu:
        return []
    devices = sorted(str(p) for p in devices_dir.glob("nvidia*"))
    return [arg for device in devices for arg in ("--dev-bind", device, device)]


def bwrap_command(request: ExecutionRequest, env: dict[str, str]) -> list[str]:
    work, shm_bytes = str(request.work_dir), max(request.memory_mb // SHM_FRACTION, 16) * 2**20
    args = [tool("bwrap"), *namespace_flags(), "--hostname", "sandbox"]
    if is_root():
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    args += [*system_binds(), "--proc", "/proc", "--dev", "/dev"]
    args += ["--perms", "1777", "--size", str(shm_bytes), "--tmpfs", "/dev/shm"]
    inputs = watched_inputs(request, "bwrap") or request.input_dir
    args += ["--bind", work, SANDBOX_ROOT, "--ro-bind", str(inputs), f"{SANDBOX_ROOT}/input"]
    args += ["--bind", f"{work}/tmp", "/tmp", *gpu_binds(request.allow_gpu)]
    args += _python_binds()  # last: an interpreter installed under /tmp must not be hidden by the /tmp bind
    args += ["--chdir", SANDBOX_ROOT, "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args


def cpu_limit_s(request: ExecutionRequest) -> int:
    """The CPU-seconds rlimit: a backstop behind the wall clock that lets every core stay busy."""
    return math.ceil(request.timeout_s * (os.cpu_count() or 1)) + 1


def _rlimit_command(request: ExecutionRequest) -> list[str]:
    cpu_s = cpu_limit_s(request)
    return [
        tool("prlimit"),
        f"--as={request.memory_mb * 2**20}",
        f"--cpu={cpu_s}:{cpu_s + 5}",
        f"--fsize={request.max_file_mb * 2**20}",
        f"--nproc={request.max_processes}",
        "--nofile=1024",
        "--core=0",
        "--",
    ]


def program_env(
    request: ExecutionRequest, isolation: Isolation, marker_fd: int | None = None
) -> dict[str, str]:
    """The whole environment the program sees (with the marker channel's descriptor, when it has one)."""
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
    if marker_fd is not None:
        env[CHANNEL_ENV] = str(marker_fd)
    return env


def build_command(
    request: ExecutionRequest, isolation: Isolation, uid: int | None, marker_fd: int | None = None
) -> tuple[list[str], dict[str, str]]:
    """(argv, env for the spawned process): prlimit, then bwrap or nothing, then setpriv when root."""
    env = program_env(request, isolation, marker_fd)
    switch_user = setpriv(uid) if uid is not None else []
    if isolation == "bwrap":
        program = f"{SANDBOX_ROOT}/{PROGRAM_NAME}"
        return [
            *_rlimit_command(request),
            *bwrap_command(request, env),
            "--",
            *switch_user,
            _interpreter(),
            program,
        ], {}
    return [*_rlimit_command(request), *switch_user, _interpreter(), "-c", _FALLBACK_MAIN], env
