"""Start a run's supervisor: a Celery task on the `gpu` queue when a broker is configured (REDIS_URL),
otherwise a thread of this process (the embedded default). Either way only after the run commits."""

from __future__ import annotations

import threading

from django.conf import settings
from django.db import connections, transaction


def enqueue_run(run_id: int) -> None:
    transaction.on_commit(lambda: start_supervisor(run_id))


def start_supervisor(run_id: int) -> None:
    if settings.REDIS:
        enqueue_supervisor(run_id)
        return
    thread = threading.Thread(target=supervise_in_thread, args=[run_id], name=f"run-{run_id}", daemon=True)
    thread.start()


def enqueue_supervisor(run_id: int, *, app=None) -> None:
    """Send supervise_run to the `gpu` queue and mark it as waiting there (workers.recovery reads it)."""
    from workers.coordination import shared_client, supervisor_queued_key
    from workers.options import option
    from workers.tasks import supervise_run

    shared_client().set(supervisor_queued_key(run_id), "1", ex=option("PRACTICUM_VISIBILITY_TIMEOUT_S"))
    if app is None:
        supervise_run.apply_async(args=[run_id], queue="gpu")
    else:
        app.send_task("practicum.supervise_run", args=[run_id], queue="gpu")


def supervise_in_thread(run_id: int) -> None:
    """The supervise task's body in a thread of its own, its attempts on this machine (LocalExecutor),
    closing that thread's database connections after."""
    from workers.supervision import supervise

    try:
        supervise(run_id, distributed=False)
    finally:
        connections.close_all()
