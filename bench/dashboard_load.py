"""Live dashboards under load: event delivery to 100 websocket viewers, and a 10,000-attempt run page.

    python bench/dashboard_load.py [--quick] [--json PATH]

What runs: a real daphne subprocess serving webapp.asgi (DEBUG off), the channels_redis layer on the
machine's Redis (redis://127.0.0.1:6379/2) and a PostgreSQL database of the bench's own
(practicum_bench: created when missing, migrated, its runs from earlier passes deleted), with a
temporary PRACTICUM_DATA_DIR. Nothing is mocked.

1. Live delivery. 100 viewers (autobahn's asyncio websocket client, in a child process) watch one
   public run at /ws/runs/<id>/ while one publisher drives the real services at 20 events a second:
   attempt_start, then attempt_finish, for each attempt; each commits its rows and publishes its event
   after the commit through async_to_sync(group_send), as the workers do. Events carry no send time,
   so the publisher notes time.time() just before it calls the service; a viewer's latency for an
   event is its arrival time minus that call time (one machine, one clock), matched by the attempt's
   key and phase. The latency therefore covers the transaction, the channel layer, daphne and the
   socket. Lost = events, by seq, between a viewer's snapshot and the run's last seq that it never
   received (5 s of grace after the last event). Also reported: the rate the publisher held and the
   CPU seconds daphne, the viewers and the publisher used, since on a shared machine the latency
   mostly measures how much CPU the others left. Quick: 20 s; full: 60 s.
   Targets: p95 <= 250 ms (`results.p95_ms`), no lost events (`results.lost_events`).
2. Page load. A public run with 10,000 finished attempts and 1,250 learner updates (bulk inserted).
   Timed (a) by a plain client: HTTP GET of /runs/<id>/, then the websocket snapshot the page asks for
   (its size too: daphne refuses to send a message over 1 MiB); and (b) as a user sees it, in headless
   Chromium (Playwright, /usr/bin/chromium): from navigation until run.js has drawn the charts and the
   table, for a first visit (a fresh context: plotly.js's basic bundle, 1.2 MB, fetched and compiled)
   and for a returning visitor (a profile on disk, after two visits). Targets: median first visit <= 1.5 s
   (`results.page_load_s`); the returning visitor's median is `results.page_load_warm_s`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import multiprocessing
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

from _common import ROOT, bench_arguments, machine_info, print_table, target, write_json

from rl_core.outcome import AttemptOutcome

DATABASE_URL = "postgresql://practicum:practicum@127.0.0.1:5432/practicum_bench"
REDIS_URL = "redis://127.0.0.1:6379/2"
SLUG = "iris-species"
VIEWERS = 100
RATE_HZ = 20.0
GRACE_S = 5.0
PAGE_ATTEMPTS = 10_000
UPDATE_EVERY = 8  # attempts per learner update in the seeded run
WARM_UP_VISITS = 2  # Chromium keeps a script's compiled code from its second load on
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
DRAWN = (
    "window.practicum && window.practicum.charts >= 1"
    " && document.querySelectorAll('#attempts tbody tr').length > 0"
)
LEARNER_METRICS = (
    "losses/policy", "losses/entropy", "losses/kl", "losses/total", "charts/entropy", "charts/clip_fraction",
    "charts/grad_norm", "charts/reward_mean", "charts/reward_max", "charts/valid_rate",
    "charts/duration_mean_s", "charts/staleness_mean", "charts/staleness_max", "charts/duration_weight_max",
    "charts/lr",
)  # fmt: skip
Label = tuple[str, str]  # (attempt key, "start" | "finish"): the publisher call that made an event
SAMPLE = {"prompt_kind": "solve", "family": "random_forest", "info": {}, "response": "plan\n```python\n```"}
RESULT = {
    "status": "ok", "exit_code": 0, "duration_s": 2.5, "valid": True, "score": 0.9, "reward": 0.9,
    "stages": ["imports_done", "data_loaded", "model_defined", "model_trained", "predictions_made",
               "submission_written"],
    "isolation": "bwrap", "stdout_tail": "fit\n", "stderr_tail": "", "grade_error": "",
}  # fmt: skip


# --- the services: database, daphne -------------------------------------------------------------


def configure(tmp: Path) -> None:
    """Point this process (and daphne) at the bench database, Redis db 2 and a temporary data dir."""
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "DATABASE_URL": DATABASE_URL,
            "REDIS_URL": REDIS_URL,
            "PRACTICUM_DATA_DIR": str(tmp / "data"),
            "DEBUG": "False",
            "SECRET_KEY": secrets.token_urlsafe(32),
            "PYTHONPATH": str(ROOT),
            "LOG_LEVEL": "WARNING",
        }
    )
    ensure_database()
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def ensure_database() -> None:
    """Create practicum_bench on the PostgreSQL server when it does not exist yet."""
    import psycopg

    server, name = DATABASE_URL.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{name}"')


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_daphne(port: int, log: Path) -> subprocess.Popen:
    """daphne serving webapp.asgi on `port`, once it answers HTTP."""
    argv = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "-v", "0",
            "webapp.asgi:application"]  # fmt: skip
    with log.open("ab") as stream:
        process = subprocess.Popen(
            argv, cwd=ROOT, stdout=stream, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/runs/", timeout=5).read()
            return process
        time.sleep(0.2)
    stop(process)
    raise RuntimeError(f"daphne did not answer within 60 s:\n{log.read_text(errors='replace')[-2000:]}")


def stop(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def prepare() -> tuple[Any, Any]:
    """The bundled competition and a user that owns the bench's runs; earlier passes' runs are deleted."""
    from django.contrib.auth.models import User

    from webapp.competitions.management.commands.seed_competitions import seed_one
    from webapp.competitions.models import Competition
    from webapp.runs.models import Run

    Run.objects.all().delete()
    competition = Competition.objects.filter(slug=SLUG).first() or seed_one(SLUG)
    owner, _ = User.objects.get_or_create(username="bench-owner")
    return competition, owner


def public_run(competition: Any, owner: Any, name: str, attempts: int) -> Any:
    from rl_core.run_spec import RunConfig
    from webapp.runs import services

    config = RunConfig(attempts=attempts).to_dict()
    return services.run_create(
        owner=owner, competitions=[competition], policy="grammar", config=config, name=name, is_public=True
    )


# --- viewers: a child process ------------------------------------------------------------------
# daphne's Django app selects txaio's Twisted flavour in any process that sets Django up, and one process
# holds one flavour; so the asyncio viewers live in a child process (spawned, Django-free) that talks to
# this one over a pipe. It also keeps the viewers' work off the publisher's interpreter.


@functools.cache
def viewer_class() -> type:
    """The viewer protocol (autobahn's asyncio client), imported only where it runs: in the child."""
    from autobahn.asyncio.websocket import WebSocketClientProtocol

    class Viewer(WebSocketClientProtocol):
        """One dashboard viewer: keeps the snapshot and notes when each live event arrives, by seq."""

        def __init__(self) -> None:
            super().__init__()
            loop = asyncio.get_running_loop()
            self.snapshot: asyncio.Future = loop.create_future()
            self.gone: asyncio.Future = loop.create_future()
            self.arrivals: dict[int, tuple[float, Label]] = {}  # seq -> (arrival time, event label)
            self.snapshot_seq = 0
            self.snapshot_bytes = 0

        def onMessage(self, payload: bytes, isBinary: bool) -> None:  # autobahn's callback names
            arrived = time.time()
            message = json.loads(payload)
            if message["type"] != "snapshot":
                self.arrivals.setdefault(message["seq"], (arrived, event_label(message)))
            elif not self.snapshot.done():
                self.snapshot_seq, self.snapshot_bytes = message["seq"], len(payload)
                self.snapshot.set_result(message)

        def onClose(self, wasClean: bool, code: int | None, reason: str | None) -> None:
            if not self.gone.done():
                self.gone.set_result(code)
            if not self.snapshot.done():
                self.snapshot.set_exception(ConnectionError(f"closed before the snapshot: {code} {reason}"))

    return Viewer


async def open_viewer(port: int, run_id: int) -> Any:
    """A viewer connected to the run's websocket, once the snapshot has arrived."""
    from autobahn.asyncio.websocket import WebSocketClientFactory

    url, origin = f"ws://127.0.0.1:{port}/ws/runs/{run_id}/", f"http://127.0.0.1:{port}"
    factory = WebSocketClientFactory(url, origin=origin)
    factory.protocol = viewer_class()
    # The server's JSON is ASCII; autobahn's pure-Python UTF-8 check would only time this client.
    factory.setProtocolOptions(utf8validateIncoming=False, openHandshakeTimeout=30)
    _, viewer = await asyncio.get_running_loop().create_connection(factory, "127.0.0.1", port)
    await asyncio.wait_for(viewer.snapshot, 60)
    return viewer


async def open_viewers(port: int, run_id: int, count: int, at_once: int = 20) -> list[Any]:
    viewers: list[Any] = []
    while len(viewers) < count:
        batch = min(at_once, count - len(viewers))
        viewers += await asyncio.gather(*(open_viewer(port, run_id) for _ in range(batch)))
    return viewers


async def close_viewers(viewers: list[Any]) -> None:
    for viewer in viewers:
        viewer.sendClose()
    await asyncio.wait([asyncio.ensure_future(v.gone) for v in viewers], timeout=10)


def child(job: Any, pipe: Any, *args: Any) -> None:
    """The child's entry point: run the coroutine `job(pipe, *args)`; any failure goes back as text."""
    try:
        asyncio.run(job(pipe, *args))
    except BaseException as error:
        pipe.send({"error": f"{type(error).__name__}: {error}"})
        raise


def start_child(job: Any, *args: Any) -> tuple[Any, Any]:
    """Spawn a child running `job`; returns (process, the parent's end of the pipe)."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=child, args=(job, theirs, *args), daemon=True)
    process.start()
    return process, ours


def receive(pipe: Any, timeout_s: float) -> Any:
    """The child's next message; raises when it failed or said nothing in time."""
    try:
        if not pipe.poll(timeout_s):
            raise RuntimeError(f"the viewers' process said nothing within {timeout_s:g} s")
        message = pipe.recv()
    except EOFError:
        raise RuntimeError("the viewers' process ended without an answer") from None
    if isinstance(message, dict) and "error" in message:
        raise RuntimeError(f"the viewers' process failed: {message['error']}")
    return message


# --- 1. live delivery ---------------------------------------------------------------------------


def publish_events(run_id: int, competition: Any, count: int, rate_hz: float) -> dict[Label, float]:
    """Make `count` events on a fixed schedule of `rate_hz` (a late call is not made up for): each even
    slot starts a new attempt, each odd one finishes it. Returns {label: time.time() just before the
    call}. One publisher: two concurrent ones can deadlock in PostgreSQL (attempt_finish locks the
    competition row through select_related + select_for_update, which attempt_start's deferred
    foreign-key check on commit then waits for, while attempt_finish waits for the run row)."""
    from django.db import connection

    sent: dict[Label, float] = {}
    started = time.monotonic()
    try:
        for n in range(count):
            time.sleep(max(0.0, started + n / rate_hz - time.monotonic()))
            label = (f"live-{n // 2}", "start" if n % 2 == 0 else "finish")
            sent[label] = time.time()
            publish_one(run_id, competition, label)
    finally:
        connection.close()
    return sent


def publish_one(run_id: int, competition: Any, label: Label) -> None:
    """One event through the real services: the attempt's start or its finish."""
    from webapp.runs import services

    key, phase = label
    if phase == "start":
        services.attempt_start(
            run_id=run_id, key=key, competition=competition, sample_fields=SAMPLE, policy_version=0
        )
    else:
        services.attempt_finish(run_id=run_id, key=key, outcome=AttemptOutcome.from_dict(RESULT), staleness=0)


def event_label(message: dict[str, Any]) -> Label:
    """Which publisher call made this event (a started attempt is still "running")."""
    if message["type"] != "attempt":
        return message["type"], ""
    attempt = message["attempt"]
    return attempt["key"], "start" if attempt["status"] == "running" else "finish"


async def watch_events(pipe: Any, port: int, run_id: int, count: int, grace_s: float) -> None:
    """In the child: open `count` viewers and say "ready"; take the publisher's call times and the
    run's last seq from the parent once it has published; wait for the stragglers; send back the
    delivery statistics."""
    viewers = await open_viewers(port, run_id, count)
    pipe.send("ready")
    cpu_s = time.process_time()
    sent, last_seq = await asyncio.to_thread(pipe.recv)
    await await_delivery(viewers, last_seq, grace_s)
    cpu_s = time.process_time() - cpu_s
    dropped = sum(v.gone.done() for v in viewers)
    await close_viewers(viewers)
    stats = delivery_stats(sent, last_seq, viewers)
    pipe.send({**stats, "viewers": len(viewers), "viewers_dropped": dropped, "viewers_cpu_s": cpu_s})


def missing(viewer: Any, last_seq: int) -> int:
    """How many of the events after its snapshot, up to `last_seq`, the viewer has not received."""
    return sum(seq not in viewer.arrivals for seq in range(viewer.snapshot_seq + 1, last_seq + 1))


async def await_delivery(viewers: list[Any], last_seq: int, grace_s: float) -> None:
    """Return once every viewer has every event up to `last_seq`, or after `grace_s`."""
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(missing(v, last_seq) for v in viewers):
        await asyncio.sleep(0.1)


def measure_delivery(
    daphne: subprocess.Popen, port: int, run_id: int, competition: Any, duration_s: float
) -> dict[str, Any]:
    """VIEWERS viewers (in a child process) while this process publishes RATE_HZ events a second. Also
    the CPU seconds each party used meanwhile: on a shared machine, the cost apart from the waiting."""
    from webapp.runs.models import Run

    process, pipe = start_child(watch_events, port, run_id, VIEWERS, GRACE_S)
    try:
        receive(pipe, 120)
        count = int(duration_s * RATE_HZ)
        started, publisher_cpu_s = time.monotonic(), time.process_time()
        daphne_cpu_s = cpu_seconds(daphne.pid)
        sent = publish_events(run_id, competition, count, RATE_HZ)
        publish_rate_hz = count / (time.monotonic() - started)
        publisher_cpu_s = time.process_time() - publisher_cpu_s
        pipe.send((sent, Run.objects.values_list("event_seq", flat=True).get(id=run_id)))
        stats = receive(pipe, GRACE_S + 60)
        daphne_cpu_s = cpu_seconds(daphne.pid) - daphne_cpu_s
    finally:
        process.join(timeout=30)
    return {**stats, "events": count, "publish_rate_hz": publish_rate_hz, "publisher_cpu_s": publisher_cpu_s,
            "daphne_cpu_s": daphne_cpu_s, "load_average": os.getloadavg()[0]}  # fmt: skip


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def delivery_stats(sent: dict[Label, float], last_seq: int, viewers: list[Any]) -> dict[str, Any]:
    """Latency percentiles over every (viewer, event) delivery; lost = (viewer, seq) pairs after the
    viewer's snapshot that never arrived; unmatched = events no publisher call explains (expected 0)."""
    arrivals = [arrival for v in viewers for arrival in v.arrivals.values()]
    latencies_ms = [1000 * (at - sent[label]) for at, label in arrivals if label in sent]
    stats = {"lost_events": sum(missing(v, last_seq) for v in viewers),
             "unmatched": len(arrivals) - len(latencies_ms), "delivered": len(latencies_ms)}  # fmt: skip
    if not latencies_ms:
        return {**stats, "p50_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}
    cuts = statistics.quantiles(latencies_ms, n=100, method="inclusive")
    return {**stats, "p50_ms": statistics.median(latencies_ms), "p95_ms": cuts[94], "p99_ms": cuts[98],
            "max_ms": max(latencies_ms)}  # fmt: skip


# --- 2. page load -------------------------------------------------------------------------------


def seed_large_run(competition: Any, owner: Any, attempts: int) -> Any:
    """A finished public run with `attempts` attempts and a learner update every UPDATE_EVERY of them.
    Bulk inserts, as a fixture: the services would publish 20,000 events nobody watches."""
    from webapp.runs.models import Attempt, LearnerStep, Run

    run = public_run(competition, owner, f"{attempts} attempts", attempts)
    started = run.created_at - timedelta(seconds=2 * attempts)
    rng = random.Random(0)
    Attempt.objects.bulk_create(
        [fake_attempt(run, competition, n, started, rng) for n in range(1, attempts + 1)], batch_size=1000
    )
    steps = [fake_step(run, v, rng) for v in range(1, attempts // UPDATE_EVERY + 1)]
    LearnerStep.objects.bulk_create(steps, batch_size=1000)
    best = Attempt.objects.filter(run=run, valid=True).order_by("-score", "number").first()
    Run.objects.filter(id=run.id).update(
        status=Run.Status.FINISHED, started_at=started, finished_at=started + timedelta(seconds=2 * attempts),
        attempts_done=attempts, policy_version=len(steps), best_score=best.score, best_attempt=best,
    )  # fmt: skip
    return run


def fake_attempt(run: Any, competition: Any, n: int, started: Any, rng: random.Random) -> Any:
    """Attempt n, finished, with program and output text of realistic size (about 3 kB)."""
    from webapp.runs.models import Attempt

    valid = rng.random() < 0.7
    stages = RESULT["stages"][: 6 if valid else rng.randrange(0, 5)]
    score = round(min(1.0, 0.5 + 0.4 * n / PAGE_ATTEMPTS + rng.gauss(0, 0.05)), 4) if valid else None
    program = "import pandas as pd\n" + "".join(f"x_{i} = model.fit(train)  # step {i}\n" for i in range(40))
    return Attempt(
        run=run, key=f"0-{n}", competition=competition, number=n, tries=1, policy_version=n // UPDATE_EVERY,
        staleness=rng.randrange(0, 4), prompt_kind=rng.choice(["solve", "improve"]),
        family=rng.choice(["logistic", "random_forest", "gradient_boosting", "knn"]),
        status="ok" if valid else "error", exit_code=0 if valid else 1, stages=stages, valid=valid,
        score=score, reward=score if valid else -1.0 + 0.1 * len(stages),
        duration_s=rng.lognormvariate(0.5, 1.0), isolation="bwrap", instrumentation="ast",
        plan="Fit a model.", response=program, program=program, instrumented_program=program,
        stdout_tail="fit\n" * 50, stderr_tail="" if valid else "Traceback ...\nValueError\n",
        started_at=started + timedelta(seconds=2 * n - 1.5), finished_at=started + timedelta(seconds=2 * n),
    )  # fmt: skip


def fake_step(run: Any, version: int, rng: random.Random) -> Any:
    """Learner update `version`, with the metric keys rl_core.learner records."""
    from webapp.runs.models import LearnerStep

    metrics = {key: rng.random() for key in LEARNER_METRICS}
    return LearnerStep(run=run, version=version, attempts_done=UPDATE_EVERY * version, metrics=metrics,
                       wall_s=2.0 * UPDATE_EVERY * version)  # fmt: skip


async def load_plainly(pipe: Any, port: int, run_id: int) -> None:
    """In the child: time an HTTP GET of the page, then the websocket snapshot the page asks for."""
    started = time.perf_counter()
    page = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/runs/{run_id}/")
    page_s = time.perf_counter() - started
    viewer = await open_viewer(port, run_id)
    loaded_s = time.perf_counter() - started
    snapshot = viewer.snapshot.result()
    await close_viewers([viewer])
    pipe.send({"page_s": page_s, "page_and_snapshot_s": loaded_s, "page_kb": len(page) / 1024,
               "snapshot_kb": viewer.snapshot_bytes / 1024, "snapshot_attempts": len(snapshot["attempts"]),
               "snapshot_metrics": len(snapshot["metrics"])})  # fmt: skip


def http_get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read()


def time_plain_load(port: int, run_id: int) -> dict[str, Any]:
    process, pipe = start_child(load_plainly, port, run_id)
    try:
        return receive(pipe, 120)
    finally:
        process.join(timeout=30)


def time_browser_loads(port: int, run_id: int, loads: int, profile: Path) -> dict[str, list[dict]]:
    """`loads` page loads of a first-time visitor (a fresh context each: nothing cached) and of a
    returning one (one profile on disk, after WARM_UP_VISITS visits: plotly.js is in the HTTP cache and
    its compiled code in V8's code cache, as for anyone who opened a dashboard page that day)."""
    from playwright.sync_api import sync_playwright

    url = f"http://127.0.0.1:{port}/runs/{run_id}/"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            cold = [fresh_context_load(browser, url) for _ in range(loads)]
        finally:
            browser.close()
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=CHROMIUM_FLAGS
        )
        try:
            warm = [page_load(context, url) for _ in range(WARM_UP_VISITS + loads)][WARM_UP_VISITS:]
        finally:
            context.close()
    return {"cold": cold, "warm": warm}


def fresh_context_load(browser: Any, url: str) -> dict[str, float]:
    context = browser.new_context()
    try:
        return page_load(context, url)
    finally:
        context.close()


def page_load(context: Any, url: str) -> dict[str, float]:
    """Seconds from navigation until run.js has drawn the charts and the table (`load_s`), and until
    the document (with the deferred plotly.js evaluated) was ready (`plotly_ready_s`)."""
    page = context.new_page()
    try:
        started = time.perf_counter()
        page.goto(url, wait_until="commit")
        page.wait_for_function(DRAWN, polling=20, timeout=60_000)
        load_s = time.perf_counter() - started
        ready_ms = page.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
        return {"load_s": load_s, "plotly_ready_s": ready_ms / 1000}
    finally:
        page.close()


def browser_summary(loads: list[dict[str, float]], prefix: str) -> dict[str, float]:
    """Median and worst load, and the median time until plotly.js was ready, of one kind of visit."""
    times = [load["load_s"] for load in loads]
    ready = statistics.median(load["plotly_ready_s"] for load in loads)
    return {f"{prefix}_median_s": statistics.median(times), f"{prefix}_max_s": max(times),
            f"{prefix}_plotly_ready_s": ready}  # fmt: skip


# --- main ---------------------------------------------------------------------------------------


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0])
    duration_s, loads = (20.0, 3) if args.quick else (60.0, 5)
    with tempfile.TemporaryDirectory(prefix="practicum-bench-") as name:
        tmp = Path(name)
        configure(tmp)
        competition, owner = prepare()
        live_run = public_run(competition, owner, "live load", 10**6)
        big_run = seed_large_run(competition, owner, PAGE_ATTEMPTS)
        port = free_port()
        daphne = start_daphne(port, tmp / "daphne.log")
        try:
            live = measure_delivery(daphne, port, live_run.id, competition, duration_s)
            plain = time_plain_load(port, big_run.id)
            browser = time_browser_loads(port, big_run.id, loads, tmp / "chromium-profile")
        finally:
            stop(daphne)
    report(args, duration_s, live, plain, browser)


def report(args: Any, duration_s: float, live: dict, plain: dict, browser: dict[str, list[dict]]) -> None:
    page = {**browser_summary(browser["cold"], "cold"), **browser_summary(browser["warm"], "warm"),
            "loads": len(browser["cold"]), "load_average": os.getloadavg()[0]}  # fmt: skip
    print_measurements(duration_s, live, plain, page)
    targets = {
        "p95_ms": target(live["p95_ms"], "<=", 250.0),
        "lost_events": target(float(live["lost_events"]), "<=", 0.0),
        "page_load_s": target(page["cold_median_s"], "<=", 1.5),
        "page_load_warm_s": target(page["warm_median_s"], "<=", 1.5),
    }
    target_rows = [{"target": k, **v} for k, v in targets.items()]
    print_table(target_rows, ["target", "op", "threshold", "measured", "met"], title="targets")
    write_json(
        args.json, benchmark="dashboard_load", machine=machine_info(),
        config={"quick": args.quick, "viewers": VIEWERS, "rate_hz": RATE_HZ, "duration_s": duration_s,
                "grace_s": GRACE_S, "page_attempts": PAGE_ATTEMPTS, "browser_loads": page["loads"],
                "warm_up_visits": WARM_UP_VISITS, "database": DATABASE_URL, "redis": REDIS_URL,
                "server": "daphne (DEBUG=False)"},
        targets=targets,
        results={"p50_ms": live["p50_ms"], "p95_ms": live["p95_ms"], "lost_events": live["lost_events"],
                 "page_load_s": page["cold_median_s"], "page_load_warm_s": page["warm_median_s"],
                 "live": live, "page_plain": plain, "page_browser": page, "browser_loads": browser},
    )  # fmt: skip


def print_measurements(duration_s: float, live: dict, plain: dict, page: dict) -> None:
    print_table(
        [live], ["viewers", "events", "publish_rate_hz", "p50_ms", "p95_ms", "p99_ms", "max_ms",
                 "lost_events", "viewers_dropped", "daphne_cpu_s", "viewers_cpu_s", "publisher_cpu_s",
                 "load_average"],
        title=f"Live delivery: {VIEWERS} websocket viewers, {RATE_HZ:g} events/s for {duration_s:g} s "
              "through the services, channels_redis and daphne (latency from the service call, ms)",
    )  # fmt: skip
    print_table(
        [plain], ["page_s", "page_and_snapshot_s", "page_kb", "snapshot_kb", "snapshot_attempts",
                  "snapshot_metrics"],
        title=f"Run page with {PAGE_ATTEMPTS} attempts, plain client: HTTP GET, then the snapshot (s)",
    )  # fmt: skip
    print_table(
        [page], list(page),
        title="The same page in headless Chromium, until the charts and the table are drawn (s): a first "
              "visit (fresh context) and a returning visitor (plotly.js cached and compiled)",
    )  # fmt: skip


if __name__ == "__main__":
    main()
