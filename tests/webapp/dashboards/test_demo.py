"""`manage.py demo` as a newcomer runs it: no environment at all (SQLite, in-process channel layer and
workers), a real daphne serving the dashboard, and a live GrammarPolicy run whose attempts reach the API."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except OSError:
        return 0, b""


def finished_attempts(url: str) -> list[dict]:
    """The run's finished attempts, or none while the API does not answer (a busy machine: try again)."""
    status, body = get(url)
    return [a for a in json.loads(body)["results"] if a["finished_at"]] if status == 200 else []


def wait_for(condition, timeout_s: float, what: str, demo: subprocess.Popen):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if demo.poll() is not None:
            pytest.fail(f"the demo exited ({demo.returncode}) while waiting for {what}")
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")


def test_the_demo_serves_the_dashboard_and_a_live_run_on_embedded_defaults(tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PRACTICUM_DATA_DIR": str(tmp_path / "data")}
    output = run_the_demo(tmp_path, env)
    assert "Celery worker started" not in output  # workers are threads of the demo process


def test_with_postgresql_and_redis_the_demo_runs_its_attempts_in_celery_worker_processes(
    tmp_path, demo_database_url, demo_redis_url
):
    env = {
        "PATH": os.environ["PATH"], "HOME": str(tmp_path), "PRACTICUM_DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": demo_database_url, "REDIS_URL": demo_redis_url,
    }  # fmt: skip
    output = run_the_demo(tmp_path, env)
    assert "on queue gpu" in output and "on queue sandbox" in output


def run_the_demo(tmp_path: Path, env: dict[str, str]) -> str:
    """Migrate, start `manage.py demo`, wait for the dashboard and a finished attempt; its output."""
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=300
    )
    port, log = free_port(), (tmp_path / "demo.log").open("wb")
    argv = [sys.executable, "manage.py", "demo", "--port", str(port), "--attempts", "6"]
    demo = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        page = wait_for(lambda: (r := get(f"{base}/runs/"))[0] == 200 and r[1], 120, "the dashboard", demo)
        assert b"diabetes-progression" in page
        runs = json.loads(get(f"{base}/api/runs/")[1])["results"]
        assert runs and runs[0]["policy"] == "grammar" and runs[0]["is_public"]
        attempts_url = f"{base}/api/runs/{runs[0]['id']}/attempts/"
        finished = wait_for(lambda: finished_attempts(attempts_url), 180, "a finished attempt", demo)
        assert finished[0]["isolation"] in ("bwrap", "rlimits")
        output = (tmp_path / "demo.log").read_text()
        assert (
            "Demo user: demo / practicum-demo" in output and f"Dashboard: http://127.0.0.1:{port}/" in output
        )
        return output
    finally:
        stop(demo)


def stop(demo: subprocess.Popen) -> None:
    """Ctrl-C's worth: SIGTERM to the demo's process group (daphne, Celery workers), then SIGKILL to what
    is left after 30 s (a Celery worker's warm shutdown waits for the supervisor's whole run)."""
    os.killpg(demo.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        demo.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(demo.pid, signal.SIGKILL)
    demo.wait(timeout=30)


@pytest.fixture
def postgres_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        pytest.skip("needs DATABASE_URL of a PostgreSQL server (make test sets it)")
    return url


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("REDIS_URL", "")
    if not url.startswith("redis://"):
        pytest.skip("needs REDIS_URL (make test sets it)")
    return url


@pytest.fixture
def demo_database_url(postgres_url) -> Iterator[str]:
    """A fresh PostgreSQL database of the demo's own (the test database belongs to pytest-django)."""
    import psycopg

    name = f"practicum_demo_{secrets.token_hex(4)}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield postgres_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def demo_redis_url(redis_url) -> Iterator[str]:
    """An emptied Redis database number of the demo's own, so no other test's messages reach its workers."""
    import redis

    url = redis_url.rsplit("/", 1)[0] + "/13"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()
