"""The Celery app. Configuration comes from Django settings (REDIS_URL: Redis is broker and backend).

Queues: `sandbox` (attempts, CPU nodes), `sandbox-gpu` (attempts whose programs ask for a GPU), `gpu` (run
supervisors: the policy and the learner) and `control` (short housekeeping: celery beat's recovery task),
which every worker consumes besides its own. Start workers as docs/operations.md shows, e.g.
    celery -A workers worker -Q sandbox,control -c 4 -n sandbox@%h
    celery -A workers worker -Q gpu,control -c 1 -n gpu@%h
    celery -A workers beat

Long work, safely: tasks are acknowledged only when they end (acks_late), requeued when their worker
dies (reject_on_worker_lost), one message prefetched per process. Redis' visibility timeout (after which
an unacknowledged message is delivered again) is PRACTICUM_VISIBILITY_TIMEOUT_S, above the longest run,
so a supervisor that is still working is never handed to a second worker; attempts of a dead worker are
re-sent much sooner by their supervisor (workers.executor).

Runs whose supervisor died are restarted (workers.recovery) by `celery -A workers beat`, every
PRACTICUM_RECOVERY_INTERVAL_S, and by each worker that consumes `gpu` when it starts (workers.startup). Beat's
task goes to `control`, not `gpu`: a gpu worker's processes are each held by one supervisor for a whole run,
so a task queued behind them could wait for hours, while any worker's slot frees up within one attempt.
Recovery reads the state of the runs when it runs, so a message that waited is as good as a fresh one; they
never expire (an expired message taken first would use up the turn of a fresh one behind it).
"""

from __future__ import annotations

import os

from celery import Celery
from django.conf import settings

from workers import broker_fixes

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

ROUTES = {
    "practicum.supervise_run": {"queue": "gpu"},
    "practicum.recover_runs": {"queue": "control"},
    "practicum.execute_attempt": {"queue": "sandbox"},
}


def make_app(broker_url: str | None = None, *, set_as_current: bool = True) -> Celery:
    """A configured app; `broker_url` overrides the settings' broker and backend (tests, benchmarks)."""
    broker_fixes.install()
    visibility = {"visibility_timeout": settings.PRACTICUM_VISIBILITY_TIMEOUT_S}
    preconf = {"broker": broker_url, "backend": broker_url} if broker_url else {}
    # workers.startup: what a worker does once it is up; imported by workers only, not by the web process.
    app = Celery("practicum", set_as_current=set_as_current, include=["workers.startup"], **preconf)
    app.config_from_object("django.conf:settings", namespace="CELERY")
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue="sandbox",
        task_routes=ROUTES,
        broker_transport_options=visibility,
        result_backend_transport_options=visibility,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,  # a Redis restart is waited out, never fatal
        worker_cancel_long_running_tasks_on_connection_loss=False,  # attempts outlive a broker outage
        beat_schedule={
            "recover-runs": {
                "task": "practicum.recover_runs",
                "schedule": float(settings.PRACTICUM_RECOVERY_INTERVAL_S),
            },
            "prune-scratch": {"task": "practicum.prune_scratch", "schedule": 3600.0},
        },
    )
    if broker_url:
        app.conf.broker_url = app.conf.result_backend = broker_url
    return app


app = make_app()
app.autodiscover_tasks(["workers"])
