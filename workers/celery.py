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
PRACTICUM_RECOVERY_INTERVAL_S, and by each worker that consumes `gpu` when it starts. Beat's task goes to
`control`, not `gpu`: a gpu worker's processes are each held by one supervisor for a whole run, so a task
queued behind them could wait for hours, while any worker's slot frees up within one attempt. Recovery
reads the state of the runs when it runs, so a message that waited is as good as a fresh one; they never
expire (an expired message taken first would use up the turn of a fresh one behind it).
"""

from __future__ import annotations

import logging
import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

log = logging.getLogger(__name__)

ROUTES = {
    "practicum.supervise_run": {"queue": "gpu"},
    "practicum.recover_runs": {"queue": "control"},
    "practicum.execute_attempt": {"queue": "sandbox"},
}


def make_app(broker_url: str | None = None, *, set_as_current: bool = True) -> Celery:
    """A configured app; `broker_url` overrides the settings' broker and backend (tests, benchmarks)."""
    from workers import broker_fixes
    from workers.options import option

    broker_fixes.install()
    preconf = {"broker": broker_url, "backend": broker_url} if broker_url else {}
    app = Celery("practicum", set_as_current=set_as_current, **preconf)
    app.config_from_object("django.conf:settings", namespace="CELERY")
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue="sandbox",
        task_routes=ROUTES,
        broker_transport_options={"visibility_timeout": option("PRACTICUM_VISIBILITY_TIMEOUT_S")},
        result_backend_transport_options={"visibility_timeout": option("PRACTICUM_VISIBILITY_TIMEOUT_S")},
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,  # a Redis restart is waited out, never fatal
        worker_cancel_long_running_tasks_on_connection_loss=False,  # attempts outlive a broker outage
        beat_schedule={
            "recover-runs": {
                "task": "practicum.recover_runs",
                "schedule": float(option("PRACTICUM_RECOVERY_INTERVAL_S")),
            },
            "prune-scratch": {"task": "practicum.prune_scratch", "schedule": 3600.0},
        },
    )
    if broker_url:
        app.conf.broker_url = app.conf.result_backend = broker_url
    return app


app = make_app()
app.autodiscover_tasks(["workers"])


@worker_ready.connect
def recover_when_ready(sender, **kwargs) -> None:
    """A worker that consumes `gpu` restarts the supervisors of orphaned runs as soon as it is up."""
    queues = set(sender.app.amqp.queues.consume_from or {})
    if "gpu" not in queues:
        return
    from workers.recovery import recover_orphaned_runs

    try:
        recovered = recover_orphaned_runs()
    except Exception:  # recovery must never keep a worker from starting
        log.exception("recovering orphaned runs failed")
        return
    if recovered:
        log.warning("restarted the supervisors of runs %s", recovered)


@worker_ready.connect
def report_isolation_when_ready(sender, **kwargs) -> None:
    """A worker that runs attempts says at start which sandbox it has (bubblewrap, or the weaker fallback,
    which rl_core.sandbox warns about), rather than at its first attempt."""
    queues = set(sender.app.amqp.queues.consume_from or {})
    if not queues & {"sandbox", "sandbox-gpu"}:
        return
    from rl_core.sandbox import isolation_level

    log.info("sandbox isolation on this worker: %s", isolation_level())
