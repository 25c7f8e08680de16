"""`manage.py demo [--port 8000] [--policy grammar|lm] [--competition SLUG] [--attempts N] [--no-run]`

Seeds the bundled competitions, creates the demo user (printing its credentials), starts a run on a
bundled competition, and serves the dashboard with daphne. With no environment this is all embedded
(SQLite, in-process channel layer, the run's supervisor and attempts in threads of this process); with
DATABASE_URL and REDIS_URL set it uses PostgreSQL and Redis, with Celery workers in separate processes
(one on the gpu queue for the supervisor, one with two processes on the sandbox queue).

`--policy lm` (`make demo-lm`) runs the embedded SmolLM2-135M-Instruct: it starts from a stored warm start
for the competition when an earlier demo left one, and otherwise first fine-tunes on GrammarPolicy
demonstrations, with a progress bar and the loss curve on the run page, and stores that warm start.
"""

from __future__ import annotations

import atexit
import subprocess
import sys

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from rl_core.run_spec import RunConfig
from rl_core.sandbox import isolation_level, scores_trustworthy
from webapp.competitions.models import Competition
from webapp.runs import services
from webapp.runs.presets import LM_WARM_START

DEMO_USER, DEMO_PASSWORD = "demo", "practicum-demo"


class Command(BaseCommand):
    help = "Seed, start a live run and serve the dashboard."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--policy", choices=["grammar", "lm"], default="grammar")
        parser.add_argument("--competition", default="diabetes-progression")
        parser.add_argument("--attempts", type=int, default=None, help="default: 200 grammar, 64 lm")
        parser.add_argument("--no-run", action="store_true", help="only seed and serve")

    def handle(self, *args, host, port, policy, competition, attempts, no_run, **options):
        attempts = attempts or (200 if policy == "grammar" else 64)
        call_command("seed_competitions", stdout=sys.stderr)
        user = demo_user()
        if settings.REDIS:
            start_celery_workers()
        say(f"Demo user: {DEMO_USER} / {DEMO_PASSWORD}")
        say(f"Sandbox isolation: {isolation_level()}")  # "rlimits" means bubblewrap does not work here
        warn_if_unisolated()
        if not no_run:
            run = start_demo_run(user=user, slug=competition, policy=policy, attempts=attempts)
            say(f"Run {run.id} ({policy}) on {competition}: http://{host}:{port}/runs/{run.id}/")
        say(f"Dashboard: http://{host}:{port}/   (Ctrl-C stops)")
        serve(host, port)


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def warn_if_unisolated() -> None:
    """Say loudly when this machine's sandbox cannot hide the answers from the programs it runs."""
    if scores_trustworthy(isolation_level()):
        return
    if settings.PRACTICUM_ALLOW_UNISOLATED:
        say(
            "WARNING: SCORES ARE NOT TRUSTWORTHY. bubblewrap does not work here and this process is not "
            "root: programs run as your own user and can read the hidden answers "
            "(PRACTICUM_ALLOW_UNISOLATED=True)."
        )
    else:
        say(
            "WARNING: bubblewrap does not work here and this process is not root, so attempts will be "
            "refused (their programs could read the hidden answers). Fix the sandbox, run as root, or set "
            "PRACTICUM_ALLOW_UNISOLATED=True to run them anyway with scores that are not trustworthy."
        )


def demo_user():
    users = get_user_model()
    user = users.objects.filter(username=DEMO_USER).first()
    if user is None:
        user = users.objects.create_user(DEMO_USER, password=DEMO_PASSWORD)
    return user


LM_DEMO = {k: v for k, v in LM_WARM_START.fields.items() if k not in ("attempts", "warm_start_demos")}
"""The LM demo's run: the start form's "LM from the warm start" preset (webapp.runs.presets), what
bench/lm_valid_rate.py runs, warm-started on demonstrations first."""
LM_DEMO_DEMONSTRATIONS = LM_WARM_START.fields["warm_start_demos"]
"""Demonstrations in the LM demo's own warm-start phase (when no stored warm start fits): manage.py
warmstart's default, about 20 minutes on 2 CPU cores, shown live on the run page."""


def start_demo_run(*, user, slug: str, policy: str, attempts: int):
    competition = Competition.objects.get(slug=slug)
    config = demo_config(policy, slug, attempts)
    run = services.run_create(
        owner=user, competitions=[competition], policy=policy, config=config.to_dict(), is_public=True
    )
    services.run_enqueue(run_id=run.id)
    return run


def demo_config(policy: str, slug: str, attempts: int) -> RunConfig:
    """The demo run's settings. An LM starts from a stored warm start for this competition and the embedded
    model when there is one (an earlier demo stored it), else it fine-tunes first, live on the run page."""
    if policy == "grammar":
        return RunConfig(attempts=attempts, actors=2, batch=8)
    stored = demo_warm_start(slug)
    start = {"warm_start": stored} if stored else {"warm_start_demos": LM_DEMO_DEMONSTRATIONS}
    if stored:
        say(f"Starting the LM from the stored warm start {stored!r}.")
    return RunConfig.from_dict(LM_DEMO | start | {"attempts": attempts})


def demo_warm_start(slug: str) -> str | None:
    """The newest stored warm start of the embedded model in the compact style trained on exactly `slug`."""
    from webapp.runs import selectors

    for manifest in selectors.warm_starts_visible_to(user=None):  # newest first
        style = (manifest.get("prompt") or {}).get("style")
        fits = manifest.get("base_model") == RunConfig.model and style == LM_DEMO["prompt_style"]
        if fits and manifest.get("competitions") == [slug] and manifest.get("kind") == "lora":
            return manifest["name"]
    return None


WORKERS = (("gpu", 1), ("sandbox", 2))
"""The demo's Celery workers with a broker: (queue, processes). The supervisor holds its gpu process for
the whole run, so attempts get worker processes of their own."""


def start_celery_workers() -> None:
    """With a broker configured, the run's supervisor and its attempts run in separate Celery workers."""
    for queue, concurrency in WORKERS:
        command = [
            sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", queue, "-c", str(concurrency),
            "-n", f"demo-{queue}@%h", "-l", "warning",
        ]  # fmt: skip
        worker = subprocess.Popen(command)
        atexit.register(worker.terminate)
        say(f"Celery worker started (pid {worker.pid}) on queue {queue} with {concurrency} processes.")


def serve(host: str, port: int) -> None:
    from daphne.cli import CommandLineInterface

    CommandLineInterface().run(["-b", host, "-p", str(port), "webapp.asgi:application"])
