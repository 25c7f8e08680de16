"""Attempts per second through Celery vs. the LocalExecutor, and the Celery path's per-attempt overhead.

    python bench/celery_throughput.py [--quick] [--json PATH]

Both executors run the same trivial program (it prints one line; nothing to grade) through the real
sandbox on the bundled iris-species competition, two attempts in flight, as the loop keeps them.
- LocalExecutor: two threads of this process.
- CeleryExecutor: two `celery -A workers worker -Q sandbox -c 1` processes, a private redis-server on a
  free port (broker, results list, leases) and an SQLite database, all in a temporary folder; the
  machine's own Redis and PostgreSQL are not touched.
Overhead of one attempt = (submit to report, as the supervisor sees it) - (seconds inside run_response,
as the process running it measures). For Celery that is: sending the task, the broker, the worker's
bookkeeping (database reads, lease, outcome file) and the result's way back through Redis.
Target: median Celery overhead <= 30 ms (`results.overhead_ms_median`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, bench_arguments, machine_info, print_table, target, write_json

TRIVIAL = "Plan: print one line.\n\n```python\nprint('hello from the sandbox')\n```\n"
SLUG = "iris-species"
CAPACITY = 2


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_text(path: Path, text: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{path.name} never said {text!r}:\n{path.read_text(errors='replace')[-2000:]}")


def spawn(argv: list[str], log: Path) -> subprocess.Popen:
    with log.open("ab") as stream:
        return subprocess.Popen(
            argv,
            cwd=ROOT,
            stdout=stream,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def configure(tmp: Path, redis_url: str) -> None:
    """Point this process (and the workers it starts) at a private SQLite file, Redis and data dir."""
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
            "REDIS_URL": redis_url,
            "PRACTICUM_DATA_DIR": str(tmp / "data"),
            "PYTHONPATH": str(ROOT),
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def prepare_run() -> tuple[Any, Any]:
    """The competition and a run row for the attempts (its config only gives the reward preset)."""
    from rl_core.run_spec import RunConfig
    from webapp.competitions.management.commands.seed_competitions import seed_one
    from webapp.runs import services

    competition = seed_one(SLUG)
    config = RunConfig(attempts=10**6, actors=CAPACITY).to_dict()
    run = services.run_create(owner=None, competitions=[competition], policy="grammar", config=config)
    services.run_set_status(run_id=run.id, status="running")
    return competition, run


def jobs(competition: Any, count: int, prefix: str) -> list[Any]:
    from rl_core.executors import Job
    from rl_core.policy import Prompt, Sample
    from webapp.competitions.agent_inputs import competition_task_info

    prompt = Prompt(task=competition_task_info(competition=competition), kind="solve")
    return [Job(f"{prefix}-{n}", Sample(prompt, TRIVIAL, (0.0,), 0, {}), SLUG) for n in range(count)]


def drive(executor: Any, work: list[Any]) -> float:
    """Keep CAPACITY attempts in flight until all of `work` has finished; returns the wall-clock seconds."""
    pending, in_flight, started = list(work), 0, time.monotonic()
    while pending or in_flight:
        while pending and in_flight < CAPACITY:
            executor.submit(pending.pop(0))
            in_flight += 1
        finished = executor.wait(120)
        if not finished:
            raise RuntimeError("no attempt finished within 120 s")
        in_flight -= len(finished)
    return time.monotonic() - started


def summary(wall_s: float, latencies_s: list[float], exec_s: list[float]) -> dict[str, float]:
    overheads = [latency - inside for latency, inside in zip(latencies_s, exec_s, strict=True)]
    return {
        "attempts": len(latencies_s),
        "attempts_per_s": len(latencies_s) / wall_s,
        "latency_ms_median": 1000 * statistics.median(latencies_s),
        "run_response_ms_median": 1000 * statistics.median(exec_s),
        "overhead_ms_median": 1000 * statistics.median(overheads),
        "overhead_ms_p90": 1000 * statistics.quantiles(overheads, n=10)[-1],
    }


def bench_local(competition: Any, count: int, warmup: int, scratch: Path) -> dict[str, float]:
    from rl_core.environment import run_response
    from rl_core.executors import LocalExecutor
    from webapp.competitions.agent_inputs import competition_task_files

    inside: dict[str, float] = {}
    submitted: dict[str, float] = {}
    latencies: list[float] = []

    def timed(response: str, task: Any, work_dir: Path, **options: Any) -> Any:
        started = time.monotonic()
        outcome = run_response(response, task, work_dir, **options)
        inside[work_dir.name] = time.monotonic() - started
        return outcome

    class Timed(LocalExecutor):
        def submit(self, job: Any) -> None:
            submitted[job.attempt_id] = time.monotonic()
            super().submit(job)

        def wait(self, timeout_s: float | None) -> list[Any]:
            finished = super().wait(timeout_s)
            latencies.extend(time.monotonic() - submitted[f.attempt_id] for f in finished)
            return finished

    tasks = {SLUG: competition_task_files(competition=competition)}
    executor = Timed(tasks, capacity=CAPACITY, scratch_root=scratch, runner=timed)
    try:
        drive(executor, jobs(competition, warmup, "local-warmup"))
        latencies.clear()
        work = jobs(competition, count, "local")
        wall_s = drive(executor, work)
    finally:
        executor.close()
    return summary(wall_s, latencies, [inside[job.attempt_id] for job in work])


def bench_celery(run: Any, competition: Any, count: int, warmup: int, redis_url: str) -> dict[str, float]:
    from workers.celery import make_app
    from workers.executor import CeleryExecutor

    app = make_app(redis_url, set_as_current=False)
    executor = CeleryExecutor(run_id=run.id, capacity=CAPACITY, app=app, redis_url=redis_url, poll_s=5)
    try:
        drive(executor, jobs(competition, warmup, "celery-warmup"))
        work = jobs(competition, count, "celery")
        wall_s = drive(executor, work)
    finally:
        executor.close()
    timings = [executor.timings[job.attempt_id] for job in work]
    return summary(
        wall_s, [latency for latency, _ in timings], [float(inside or 0.0) for _, inside in timings]
    )


def start_workers(tmp: Path) -> list[subprocess.Popen]:
    workers = []
    for n in range(CAPACITY):
        log = tmp / f"worker-{n}.log"
        argv = [
            sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "sandbox", "-c", "1", "-n",
            f"bench-{n}@%h", "-l", "info", "--without-mingle", "--without-gossip", "--without-heartbeat",
        ]  # fmt: skip
        workers.append(spawn(argv, log))
        wait_for_text(log, " ready.", 120)
    return workers


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0])
    count, warmup = (20, 4) if args.quick else (100, 10)
    redis_server = shutil.which("redis-server")
    if redis_server is None:
        sys.exit("celery_throughput needs redis-server on PATH (scripts/system.sh installs it).")
    with tempfile.TemporaryDirectory(prefix="practicum-bench-") as name:
        tmp = Path(name)
        port = free_port()
        redis_url = f"redis://127.0.0.1:{port}/0"
        processes = [spawn([redis_server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--dir", name], tmp / "redis.log")]  # fmt: skip
        try:
            wait_for_text(tmp / "redis.log", "Ready to accept connections", 30)
            configure(tmp, redis_url)
            competition, run = prepare_run()
            local = bench_local(competition, count, warmup, tmp / "local")
            processes += start_workers(tmp)
            celery = bench_celery(run, competition, count, warmup, redis_url)
        finally:
            stop(processes)
    report(args, count, warmup, local, celery)


def report(args: Any, count: int, warmup: int, local: dict, celery: dict) -> None:
    columns = ["executor", "attempts", "attempts_per_s", "latency_ms_median", "run_response_ms_median",
               "overhead_ms_median", "overhead_ms_p90"]  # fmt: skip
    rows = [{"executor": "local (2 threads)", **local}, {"executor": "celery (2 workers)", **celery}]
    print_table(
        rows, columns, title=f"Trivial attempts, {CAPACITY} in flight ({count} timed, {warmup} warm-up)"
    )
    overhead = celery["overhead_ms_median"]
    print(f"\nCelery overhead per attempt: median {overhead:.1f} ms (target <= 30 ms)")
    write_json(
        args.json,
        benchmark="celery_throughput",
        machine=machine_info(),
        config={"attempts": count, "warmup": warmup, "in_flight": CAPACITY, "program": TRIVIAL},
        targets={"overhead_ms_median": target(overhead, "<=", 30.0)},
        results={
            "local": local,
            "celery": celery,
            "overhead_ms_median": overhead,
            "throughput_ratio": celery["attempts_per_s"] / local["attempts_per_s"],
        },
    )


if __name__ == "__main__":
    main()
