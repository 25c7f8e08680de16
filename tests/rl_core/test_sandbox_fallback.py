"""rl_core.sandbox under the ``rlimits`` fallback (forced here): what it still covers."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from rl_core import sandbox
from rl_core.sandbox import ExecutionRequest, ExecutionResult, execute

TOKEN = "fallback-secret-5d1e"
DETECT_ISOLATION = sandbox.isolation_level.__wrapped__  # type: ignore[attr-defined]
"""The detection itself, uncached (the fixture below replaces `isolation_level`)."""


@pytest.fixture(autouse=True)
def rlimits_only(monkeypatch):
    monkeypatch.setattr(sandbox, "isolation_level", lambda: "rlimits")


@pytest.fixture
def run(tmp_path, data_dir):
    public = tmp_path / "public"
    public.mkdir()
    (public / "train.csv").write_text("id,y\n1,2\n")
    counter = iter(range(1000))

    def run(program: str, **limits) -> tuple[ExecutionResult, Path]:
        work = data_dir / f"attempt-{next(counter)}"
        limits = {"timeout_s": 30.0, "memory_mb": 1024} | limits
        return execute(ExecutionRequest(textwrap.dedent(program), public, work, **limits)), work

    return run


def test_it_records_the_rlimits_isolation_level(run):
    result, _ = run("print('hi')")
    assert (result.status, result.stdout, result.isolation) == ("ok", "hi\n", "rlimits")


def test_program_reads_a_private_copy_of_the_public_files(run, tmp_path):
    result, work = run("print(open('input/train.csv').read(), end='')")
    assert result.stdout == "id,y\n1,2\n"
    assert (work / "input" / "train.csv").exists()


def test_program_cannot_alter_the_public_files_through_its_copy(run, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("without root the copy is the program's own")
    result, _ = run("open('input/train.csv', 'w').write('changed')")
    assert result.status == "error"
    assert (tmp_path / "public" / "train.csv").read_text() == "id,y\n1,2\n"


def test_program_sees_a_scrubbed_environment(run, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", TOKEN)
    result, _ = run("import os; print(dict(os.environ))")
    assert TOKEN not in result.stdout and "SECRET_KEY" not in result.stdout


def test_program_cannot_read_the_workers_environment_when_it_runs_as_root(run, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("only a root worker can give the program a uid of its own")
    monkeypatch.setenv("SECRET_KEY", TOKEN)
    result, _ = run(f"print(open('/proc/{os.getpid()}/environ', 'rb').read())")
    assert result.status == "error"
    assert TOKEN not in result.stdout and "PermissionError" in result.stderr


def test_an_infinite_loop_times_out(run):
    result, _ = run("while True: pass", timeout_s=1)
    assert (result.status, result.duration_s) == ("timeout", 1.0)


def test_a_memory_bomb_is_reported_as_memory(run):
    result, _ = run("x = bytearray(4 * 2**30)", memory_mb=512)
    assert result.status == "memory"


def test_a_setsid_child_is_killed_when_the_program_ends_as_root(run):
    if os.geteuid() != 0:
        pytest.skip("without root a setsid child can outlive the program (documented)")
    result, work = run(
        """
        import os, time
        if os.fork() == 0:
            os.setsid()
            while True:
                open("heartbeat", "a").write("x")
                time.sleep(0.05)
        time.sleep(0.3)
        """
    )
    assert result.status == "ok"
    beats = (work / "heartbeat").read_text()
    time.sleep(0.5)
    assert (work / "heartbeat").read_text() == beats


# ------------------------------------------------------------------------------ a non-root worker, no bwrap


def test_without_bwrap_a_non_root_worker_is_unisolated(monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setattr(sandbox, "is_root", lambda: False)
    assert DETECT_ISOLATION() == "unisolated"


def test_without_bwrap_a_root_worker_keeps_the_rlimits_level(monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setattr(sandbox, "is_root", lambda: True)
    assert DETECT_ISOLATION() == "rlimits"


def test_an_unisolated_sandbox_refuses_an_attempt_with_an_error_naming_the_setting(run, monkeypatch):
    monkeypatch.setattr(sandbox, "isolation_level", lambda: "unisolated")
    monkeypatch.setattr(sandbox, "unisolated_allowed", lambda: False)
    with pytest.raises(sandbox.UnisolatedRefused, match="PRACTICUM_ALLOW_UNISOLATED=True"):
        run("open('ran', 'w').write('yes')")


def test_a_refused_attempt_runs_nothing(run, monkeypatch, data_dir):
    monkeypatch.setattr(sandbox, "isolation_level", lambda: "unisolated")
    monkeypatch.setattr(sandbox, "unisolated_allowed", lambda: False)
    with pytest.raises(sandbox.UnisolatedRefused):
        run("print('hi')")
    assert not (data_dir / "attempt-0").exists()


def test_an_unisolated_sandbox_runs_the_attempt_when_the_operator_opted_in(run, monkeypatch):
    monkeypatch.setattr(sandbox, "isolation_level", lambda: "unisolated")
    monkeypatch.setattr(sandbox, "unisolated_allowed", lambda: True)
    result, _ = run("print('hi')")
    assert (result.status, result.stdout, result.isolation) == ("ok", "hi\n", "unisolated")


def test_the_runs_app_hands_the_operators_setting_to_the_sandbox(settings):
    from django.apps import apps

    for allowed in (True, False):
        settings.PRACTICUM_ALLOW_UNISOLATED = allowed
        apps.get_app_config("runs").ready()
        assert sandbox.unisolated_allowed() is allowed
