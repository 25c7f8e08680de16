"""Start a run's supervisor: a Celery task on the `gpu` queue when a broker is configured (REDIS_URL),
otherwise a thread of this process (the embedded default). Either way only after the run commits."""

from __future__ import annotations

import threading

from django.conf import settings
from django.db import connections, transaction


def enqueue_run(run_id: int) -> None:
    transaction.on_commit(lambda: start_supervisor(run_id))


def start_supervisor(run_id: int) -> None:
    from workers.tasks import supervise_run

    if settings.REDIS:
        supervise_run.apply_async(args=[run_id], queue="gpu")
        return
    thread = threading.Thread(target=supervise_in_thread, args=[run_id], name=f"run-{run_id}", daemon=True)
    thread.start()


def supervise_in_thread(run_id: int) -> None:
    """The supervise task's body in a thread of its own, closing that thread's database connections after."""
    from workers.tasks import supervise_run

    try:
        supervise_run.run(run_id)
    finally:
        connections.close_all()
