"""rl_core.sandbox: what a program can do in the sandbox, what the result reports, and scratch retention.

The hostile programs are in test_sandbox_hostile.py; the rlimits fallback in test_sandbox_fallback.py.
"""

from __future__ import annotations

import itertools
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rl_core import sandbox
from rl_core.instrument import CHANNEL_ENV, instrument
from rl_core.sandbox import (
    ExecutionRequest,
    ExecutionResult,
    command,
    decide_status,
    execute,
    host,
    prune_scratch,
)
from rl_core.workload import PROGRAMS


class Sandbox:
    """Runs programs against a tiny public dir, each in a fresh work dir under the test's data dir."""

    def __init__(self, public_dir: Path, scratch: Path) -> None:
        self.public_dir, self.scratch, self.count = public_dir, scratch, itertools.count()
        self.work_dir = scratch

    def run(self, program: str, **limits) -> ExecutionResult:
        self.work_dir = self.scratch / f"attempt-{next(self.count)}"
        limits = {"timeout_s": 60.0, "memory_mb": 2048} | limits
        request = ExecutionRequest(textwrap.dedent(program), self.public_dir, self.work_dir, **limits)
        return execute(request)


@pytest.fixture
def box(tmp_path, data_dir) -> Sandbox:
    public = tmp_path / "competition" / "public"
    public.mkdir(parents=True)
    (public / "train.csv").write_text("id,x,y\n1,0.5,a\n2,1.5,b\n")
    return Sandbox(public, data_dir / "attempts")


def test_it_runs_a_program_and_reports_ok_with_its_output(box):
    result = box.run("print('hello'); import sys; print('oops', file=sys.stderr)")
    assert (result.status, result.exit_code, result.stdout, result.stderr) == ("ok", 0, "hello\n", "oops\n")


def test_it_records_the_isolation_level_on_the_result(box):
    assert box.run("pass").isolation == sandbox.isolation_level()


def test_it_uses_bubblewrap_where_bubblewrap_works():
    if not os.path.exists("/usr/bin/bwrap"):
        pytest.skip("bubblewrap is not installed here")
    assert sandbox.isolation_level() == "bwrap"


def test_a_worker_started_through_a_dotted_interpreter_path_still_runs_programs(box, monkeypatch, tmp_path):
    detour = tmp_path / "bench"  # like `bench/../.venv/bin/python`: a folder the sandbox does not have
    detour.mkdir()
    monkeypatch.setattr(sys, "executable", f"{detour}/{os.path.relpath(sys.executable, detour)}")
    assert box.run("print('hello')").stdout == "hello\n"


def test_it_reports_a_non_zero_exit_as_an_error_with_its_code(box):
    result = box.run("import sys; sys.exit(3)")
    assert (result.status, result.exit_code) == ("error", 3)


def test_it_reports_an_uncaught_exception_as_an_error_with_the_traceback(box):
    result = box.run("raise ValueError('bad column')")
    assert result.status == "error"
    assert "ValueError: bad column" in result.stderr


def test_program_reads_the_public_files_at_input(box):
    assert box.run("print(open('input/train.csv').read(), end='')").stdout == "id,x,y\n1,0.5,a\n2,1.5,b\n"


def test_program_cannot_modify_the_public_files(box):
    result = box.run("open('input/train.csv', 'w').write('x')")
    assert result.status == "error"
    assert (box.public_dir / "train.csv").read_text().startswith("id,x,y")


def test_it_reports_the_submission_the_program_wrote(box):
    result = box.run("open('submission/submission.csv', 'w').write('id,y\\n1,a\\n')")
    assert result.submission_path == box.work_dir / "submission" / "submission.csv"
    assert result.submission_path.read_text() == "id,y\n1,a\n"


def test_it_reports_no_submission_when_none_was_written(box):
    assert box.run("pass").submission_path is None


def test_it_keeps_the_program_in_the_work_dir(box):
    box.run("print(1)")
    assert (box.work_dir / "program.py").read_text() == "print(1)"


def test_it_refuses_a_work_dir_that_already_holds_a_submission(box, data_dir):
    work = data_dir / "reused"
    (work / "submission").mkdir(parents=True)
    (work / "submission" / "submission.csv").write_text("old")
    with pytest.raises(ValueError, match="fresh work_dir"):
        execute(ExecutionRequest("pass", box.public_dir, work, timeout_s=5, memory_mb=512))


def test_program_can_write_temporary_files_and_they_stay_in_the_scratch_dir(box):
    result = box.run(
        "import tempfile; f = tempfile.NamedTemporaryFile(delete=False); f.write(b'x'); print(f.name)"
    )
    assert result.status == "ok"
    assert list((box.work_dir / "tmp").iterdir())


def test_it_keeps_only_the_tail_of_a_long_output(box):
    result = box.run("for i in range(100000): print(i)", max_output_bytes=1000)
    assert result.stdout.endswith("99999\n")
    assert len(result.stdout) < 1100
    assert "earlier bytes not kept" in result.stdout


def test_marker_lines_come_from_the_marker_channel_and_never_from_stdout(box):
    program = instrument(
        "import os\nprint('@@prac' + 'ticum:ab12:data_loaded')\nfor i in range(9999): print(i)\n"
    )
    result = box.run(program.program, max_output_bytes=1000, marker_nonce="ab12")
    assert result.marker_lines == ("@@practicum:ab12:imports_done",)


def test_a_program_without_a_marker_nonce_gets_no_marker_channel(box):
    result = box.run(
        f"import os; print(os.environ.get({CHANNEL_ENV!r}), sorted(os.listdir('/proc/self/fd')))"
    )
    assert result.stdout == "None ['0', '1', '2', '3']\n"


def test_it_finds_a_marker_written_to_the_channel_after_text_without_a_newline(box):
    program = (
        f"import os; fd = int(os.environ[{CHANNEL_ENV!r}]); os.read(fd, 64); os.write(fd, b'x' * 10000)\n"
    )
    program += "os.write(fd, b'@@practicum:ab12:model_trained\\n')\n"
    result = box.run(program, marker_nonce="ab12")
    assert result.marker_lines == (
        "x" * (512 - len("@@practicum:ab12:model_trained")) + "@@practicum:ab12:model_trained",
    )


def test_it_times_out_and_reports_the_limit_as_the_duration(box):
    started = time.monotonic()
    result = box.run("while True: pass", timeout_s=1.0)
    assert (result.status, result.exit_code, result.duration_s) == ("timeout", None, 1.0)
    assert time.monotonic() - started < 10
    assert "wall-clock limit" in result.stderr


def test_it_measures_the_duration_of_a_program(box):
    result = box.run("import time; time.sleep(0.5)")
    assert 0.5 <= result.duration_s < 5


def test_a_running_program_is_counted_for_the_lm_sampler_and_uncounted_once_it_ends(box):
    """rl_core.workload.PROGRAMS: an LM sampler of this process keeps to its share of the cores while > 0."""
    runner = threading.Thread(
        target=box.run, args=("open('started', 'w').close(); import time; time.sleep(2)",)
    )
    assert PROGRAMS.now() == 0
    runner.start()
    deadline = time.monotonic() + 30
    while not list(box.scratch.glob("attempt-*/started")) and time.monotonic() < deadline:
        time.sleep(0.02)
    counted = PROGRAMS.now()
    runner.join(60)
    assert (counted, PROGRAMS.now()) == (1, 0)


def test_program_sees_an_empty_environment_apart_from_what_python_needs(box):
    result = box.run("import os; print(sorted(os.environ))")
    names = set(eval(result.stdout))
    assert {"PATH", "HOME", "LANG", "PYTHONHASHSEED", "OMP_NUM_THREADS"} <= names
    assert names <= set(command.program_env(ExecutionRequest("", Path(), Path(), 1, 1), "bwrap")) | {"PWD"}


@pytest.mark.slow
def test_program_imports_the_ml_stack(box):
    result = box.run(
        """
        import numpy, pandas, sklearn.ensemble, lightgbm, xgboost, scipy.stats, torch
        print(torch.tensor([1.0, 2.0]).sum().item(), lightgbm.__version__ > '', xgboost.__version__ > '')
        """,
        timeout_s=240,
        memory_mb=4096,
    )
    assert (result.status, result.stdout) == ("ok", "3.0 True True\n"), result.stderr


def test_it_warns_once_and_falls_back_to_rlimits_when_bwrap_is_missing(monkeypatch, caplog):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, path=None: None)
    sandbox.isolation_level.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="rl_core.sandbox"):
            levels = {sandbox.isolation_level(), sandbox.isolation_level()}
    finally:
        sandbox.isolation_level.cache_clear()
    assert levels == {"rlimits"}
    assert len([r for r in caplog.records if "bubblewrap is not usable" in r.message]) == 1


# ------------------------------------------------------------------------------------- status rules


def status(exit_code, stderr="", *, timed_out=False, over_scratch=False, cpu_s=0.0, isolation="bwrap"):
    return decide_status(
        exit_code=exit_code,
        timed_out=timed_out,
        over_scratch=over_scratch,
        cpu_s=cpu_s,
        cpu_limit_s=10,
        stderr=stderr,
        isolation=isolation,
    )


def test_a_memory_error_in_stderr_means_memory():
    assert status(1, "Traceback...\nMemoryError\n") == "memory"


def test_a_sigkill_the_sandbox_did_not_send_means_memory():
    assert status(128 + 9) == "memory"


def test_a_sigkill_at_the_cpu_limit_means_timeout():
    assert status(128 + 9, cpu_s=9.8) == "timeout"


def test_a_sigxcpu_means_timeout():
    assert status(-24, isolation="rlimits") == "timeout"


def test_a_segfault_means_killed():
    assert status(-11, isolation="rlimits") == "killed"


def test_exceeding_the_scratch_cap_means_killed():
    assert status(None, over_scratch=True) == "killed"


def test_an_exit_code_above_128_is_a_plain_error_outside_bwrap():
    assert status(137, isolation="rlimits") == "error"


def test_a_clean_exit_with_memory_words_in_stderr_is_ok():
    assert status(0, "warning: MemoryError avoided\n") == "ok"


# ------------------------------------------------------------------------------------- retention


def make_attempt(root: Path, name: str, size_mb: int, age_days: float) -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "out.bin").write_bytes(b"x" * (size_mb * 2**20))
    stamp = time.time() - age_days * 86400
    os.utime(path, (stamp, stamp))
    return path


def test_prune_scratch_removes_attempt_dirs_older_than_the_retention(tmp_path):
    old, new = make_attempt(tmp_path, "old", 1, 10), make_attempt(tmp_path, "new", 1, 0)
    assert prune_scratch(tmp_path, keep_days=7, max_total_mb=100) == [old]
    assert new.exists() and not old.exists()


def test_prune_scratch_removes_the_oldest_dirs_until_under_the_size_cap(tmp_path):
    a, b = make_attempt(tmp_path, "a", 2, 3), make_attempt(tmp_path, "b", 2, 2)
    c = make_attempt(tmp_path, "c", 2, 1)
    assert prune_scratch(tmp_path, keep_days=7, max_total_mb=4.5) == [a]
    assert b.exists() and c.exists()


def test_prune_scratch_does_not_follow_links_out_of_the_root(tmp_path):
    outside = make_attempt(tmp_path / "elsewhere", "keep", 1, 10)
    root = tmp_path / "root"
    attempt = make_attempt(root, "old", 1, 10)
    (attempt / "link").symlink_to(outside)
    os.utime(attempt, (0, 0), follow_symlinks=False)
    prune_scratch(root, keep_days=1, max_total_mb=100)
    assert not attempt.exists() and (outside / "out.bin").exists()


def test_gpu_device_nodes_are_bound_only_when_allowed(tmp_path):
    for name in ("nvidia0", "nvidiactl", "null"):
        (tmp_path / name).touch()
    assert command.gpu_binds(False, tmp_path) == []
    assert command.gpu_binds(True, tmp_path) == [
        "--dev-bind", str(tmp_path / "nvidia0"), str(tmp_path / "nvidia0"),
        "--dev-bind", str(tmp_path / "nvidiactl"), str(tmp_path / "nvidiactl"),
    ]  # fmt: skip


def test_the_sandbox_binds_no_project_home_or_data_paths(box, data_dir):
    request = ExecutionRequest("", box.public_dir, data_dir / "attempts" / "x", 1, 1)
    args = command.bwrap_command(request, {})
    sources = {args[i + 1] for i, arg in enumerate(args) if arg in ("--bind", "--ro-bind", "--ro-bind-try")}
    forbidden = {"/", "/work", "/work/main", "/root", "/tmp", "/var/lib/postgresql", str(data_dir)}
    assert sources & forbidden == set()
    assert all(not s.startswith("/work/main/") or s.startswith(sys.prefix) for s in sources)


@pytest.mark.skipif(sandbox.isolation_level() != "bwrap", reason="needs bubblewrap")
def test_an_interpreter_installed_under_tmp_still_runs_programs(tmp_path):
    """The sandbox's /tmp (its scratch dir) must not hide a virtualenv under the host's /tmp."""
    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from rl_core.sandbox import ExecutionRequest, execute
        public = Path({str(tmp_path)!r}) / "public"
        public.mkdir()
        request = ExecutionRequest("import sys; print(sys.prefix)", public, public.parent / "work", 30, 512)
        result = execute(request)
        print(result.isolation, result.status, result.stdout.strip())
        """
    )
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(Path(sandbox.__file__).parents[2])}
    done = subprocess.run(
        [venv / "bin/python", "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["bwrap", "ok", str(venv)], done.stderr


HOLD_UID = """
import fcntl, os, sys, time
from rl_core.sandbox.host import UID_LOCK_DIR
UID_LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
fd = os.open(UID_LOCK_DIR / sys.argv[1], os.O_CREAT | os.O_RDWR, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="programs get uids of their own only when the worker is root")
def test_a_uid_in_use_by_another_worker_process_is_not_given_to_a_second_attempt(monkeypatch):
    first = host.UID_RANGE.start
    other = subprocess.Popen(
        [sys.executable, "-c", HOLD_UID, str(first)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "held"
        monkeypatch.setattr(host, "UID_RANGE", range(first, first + 2))
        for _ in range(10):  # the choice is random: ten tries, all must avoid the held uid
            uid = host.acquire_uid()
            host.release_uid(uid)
            assert uid == first + 1
    finally:
        other.kill()
        other.wait()
