"""A small real cluster for tests: Celery worker subprocesses of this checkout (and, when a test needs one, a
private redis-server or a daphne serving the webapp), all pointed at the pytest-django test database, one
Redis database of their own and the test's PRACTICUM_DATA_DIR. Every process is SIGKILLed with its whole
process tree at teardown.

Loaded by tests/workers/conftest.py, tests/faults/conftest.py and tests/browser/conftest.py
(`load_cluster_module`), which expose its fixtures: `redis_url`, `cluster`, `iris`, `sleep_policy`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
REDIS_DBS = (11, 12, 13, 14, 15)  # other suites use db 0; each test here flushes the one it takes
LEASE_S = 2
"""The attempt lease the tests' workers and supervisors use: a dead worker is noticed within ~2 leases."""


def wait_for(
    condition: Callable[[], Any], *, timeout_s: float, what: str, interval_s: float = 0.1,
    state: Callable[[], Any] | None = None,
) -> Any:  # fmt: skip
    """Poll `condition()` until it returns something truthy (returned), or fail the test after `timeout_s`,
    saying what `state()` then returns (what the next engineer needs to see why)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval_s)
    seen = f"; state then: {state()}" if state is not None else ""
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}{seen}")


def children_of(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = Path(f"/proc/{name}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(name))
    return found


def descendants_of(pid: int) -> list[int]:
    """Every process below `pid`, depth first."""
    result = []
    for child in children_of(pid):
        result += [child, *descendants_of(child)]
    return result


def kill_tree(pid: int) -> None:
    """SIGKILL `pid`, its process group and everything below it (a machine losing power, as far as the
    processes go)."""
    tree = [pid, *descendants_of(pid)]
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    for each in tree:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(each, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def accepts_connections(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


@dataclasses.dataclass
class Process:
    name: str
    process: subprocess.Popen
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def owns(self, pid: int) -> bool:
        return pid == self.pid or pid in descendants_of(self.pid)


class Cluster:
    """Worker processes for one test. `env` is what they run with; `app` sends tasks to their broker."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        from workers.celery import make_app

        self.env, self.log_dir = env, log_dir
        self.app = make_app(env["REDIS_URL"], set_as_current=False)
        self.processes: list[Process] = []

    def spawn(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None) -> Process:
        log_path = self.log_dir / f"{name}.log"
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                list(argv), cwd=ROOT, env=env or self.env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        spawned = Process(name, process, log_path)
        self.processes.append(spawned)
        return spawned

    def start_worker(self, name: str, queues: str = "sandbox", *, concurrency: int = 1) -> Process:
        """A `celery -A workers worker` on `queues`; returns once it is consuming."""
        argv = [
            sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", queues, "-c", str(concurrency),
            "-n", f"{name}@%h", "-l", "info", "--without-mingle", "--without-gossip", "--without-heartbeat",
        ]  # fmt: skip
        worker = self.spawn(name, argv)
        wait_for(lambda: " ready." in worker.log() or worker.process.poll() is not None, timeout_s=90,
                 what=f"worker {name} to start")  # fmt: skip
        assert worker.process.poll() is None, f"worker {name} exited:\n{worker.log()[-3000:]}"
        return worker

    def start_beat(self, *, interval_s: int) -> Process:
        """`celery -A workers beat` with its recovery task every `interval_s`; returns once it is sending."""
        argv = [
            sys.executable, "-m", "celery", "-A", "workers", "beat", "-l", "info",
            "-s", str(self.log_dir / "celerybeat-schedule"),
        ]  # fmt: skip
        beat = self.spawn("beat", argv, self.env | {"PRACTICUM_RECOVERY_INTERVAL_S": str(interval_s)})
        wait_for(lambda: "Sending due task" in beat.log() or beat.process.poll() is not None, timeout_s=60,
                 what="celery beat to send its first task")  # fmt: skip
        assert beat.process.poll() is None, f"celery beat exited:\n{beat.log()[-3000:]}"
        return beat

    def start_daphne(self, name: str = "daphne") -> str:
        """`daphne webapp.asgi:application` (HTTP and websockets) on a free port of 127.0.0.1, with the
        workers' environment; returns its base URL once it accepts connections."""
        port = free_port()
        argv = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.asgi:application"]
        server = self.spawn(name, argv)
        wait_for(lambda: accepts_connections(port) or server.process.poll() is not None, timeout_s=60,
                 what=f"{name} to listen on port {port}")  # fmt: skip
        assert server.process.poll() is None, f"{name} exited:\n{server.log()[-3000:]}"
        return f"http://127.0.0.1:{port}"

    def kill(self, process: Process) -> None:
        kill_tree(process.pid)
        process.process.wait(timeout=30)

    def sandbox_processes(self) -> list[int]:
        """Pids of programs running under any worker (the pool processes' children)."""
        found = []
        for process in self.processes:
            if process.process.poll() is None:
                for pool_child in children_of(process.pid):
                    found += children_of(pool_child)
        return found

    def close(self) -> None:
        for process in self.processes:
            with contextlib.suppress(Exception):
                kill_tree(process.pid)
                process.process.wait(timeout=30)


def database_url() -> str:
    from django.conf import settings

    db = settings.DATABASES["default"]
    host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    return f"postgresql://{db['USER']}:{db['PASSWORD']}@{host}/{db['NAME']}"


def cluster_env(redis_url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_"))}
    return env | {
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "DATABASE_URL": database_url(),
        "REDIS_URL": redis_url,
        "PRACTICUM_DATA_DIR": str(data_dir),
        "PRACTICUM_ATTEMPT_LEASE_S": str(LEASE_S),
        "PRACTICUM_SUPERVISOR_LEASE_S": str(LEASE_S),
        "PRACTICUM_RESULT_POLL_S": "1",
        "PYTHONPATH": str(ROOT),
        "LOG_LEVEL": "WARNING",
        **extra,
    }


_db_counter = iter(range(10**6))


@pytest.fixture
def redis_url(settings):
    """A Redis database of this test's own (flushed before and after); settings.REDIS points at it, and runs
    started in this process go to Celery (settings.RUN_DISPATCHER), as with REDIS_URL set at start-up. The
    database REDIS_URL names, unless that is 0 (the other suites'): then one of REDIS_DBS in turn."""
    import redis

    from webapp.env import RedisConfig

    base = settings.REDIS.url if settings.REDIS else "redis://127.0.0.1:6379/0"
    server, db = base.rsplit("/", 1)
    db = db if db.isdigit() and db != "0" else str(REDIS_DBS[next(_db_counter) % len(REDIS_DBS)])
    url = f"{server}/{db}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    settings.REDIS = RedisConfig(url=url)
    settings.RUN_DISPATCHER = "workers.dispatch.CeleryDispatcher"
    yield url
    client.flushdb()
    client.close()


@pytest.fixture
def cluster(transactional_db, data_dir, redis_url, tmp_path) -> Iterator[Cluster]:
    """Start workers with `cluster.start_worker(name, queues)`; all of them die at teardown (before the
    test database is flushed). Their logs are in tmp_path/logs."""
    logs = tmp_path / "logs"
    logs.mkdir()
    running = Cluster(cluster_env(redis_url, data_dir), logs)
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def iris(transactional_db, data_dir):
    """The bundled iris-species competition, seeded into the test database and data dir."""
    from webapp.competitions.management.commands.seed_competitions import seed_one

    return seed_one("iris-species")


def sleep_program(seconds: float) -> str:
    """A response whose program sleeps `seconds`, then submits the sample submission (a valid attempt)."""
    code = (
        f"import shutil\nimport time\n\ntime.sleep({seconds})\n"
        "shutil.copy('input/sample_submission.csv', 'submission/submission.csv')\n"
    )
    return f"Plan: wait {seconds} s, then submit the sample submission.\n\n```python\n{code}```\n"


def sleep_policy_class():
    """A TablePolicy whose family `sleep_S` writes `sleep_program(S)`: slow attempts on demand."""
    from rl_core.policies.table import TablePolicy

    class SleepPolicy(TablePolicy):
        def sample(self, prompts, *, generator):
            samples = super().sample(prompts, generator=generator)
            return [
                dataclasses.replace(s, response=sleep_program(float(s.info["family"].split("_")[1])))
                for s in samples
            ]

    return SleepPolicy


@pytest.fixture
def sleep_policy(monkeypatch):
    """Make run supervisors in this process build a SleepPolicy over `families` (default: 3 s programs)."""

    def use(families: Sequence[str] = ("sleep_3",)) -> None:
        policy_class = sleep_policy_class()
        monkeypatch.setattr("workers.driver.build_policy", lambda config, cache: policy_class(families))

    return use


class SupervisorThread:
    """run_supervise for one run in a thread of the test process, on a CeleryExecutor built by `make`."""

    def __init__(self, run_id: int, make_executor: Callable[[], Any]) -> None:
        self.run_id, self.make_executor = run_id, make_executor
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"supervisor-{run_id}", daemon=True)

    def _run(self) -> None:
        from django.db import connections

        from workers.driver import run_supervise

        try:
            run_supervise(run_id=self.run_id, executor=self.make_executor())
        except BaseException as error:  # reported by join()
            self.error = error
        finally:
            connections.close_all()

    def start(self) -> SupervisorThread:
        self.thread.start()
        return self

    def join(self, timeout_s: float) -> None:
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), (
            f"the supervisor of run {self.run_id} did not finish in {timeout_s} s"
        )


def lease_holder_pid(value: str) -> int:
    """The pid of the process holding an attempt lease ("digest host:pid token")."""
    return int(value.split(" ")[1].rsplit(":", 1)[1])


def redis_server(cluster: Cluster, port: int, data_dir: Path) -> Process:
    """A private, non-persistent redis-server on `port` (like CI's), owned by `cluster`."""
    data_dir.mkdir(exist_ok=True)
    argv = [
        shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind", "127.0.0.1",
        "--save", "", "--appendonly", "no", "--dir", str(data_dir),
    ]  # fmt: skip
    server = cluster.spawn(f"redis-{port}-{len(cluster.processes)}", argv)
    wait_for(lambda: "Ready to accept connections" in server.log(), timeout_s=30, what="redis-server")
    return server
