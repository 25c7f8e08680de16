"""The dispatchers webapp.runs.dispatch hands runs to (settings.RUN_DISPATCHER names one, by REDIS_URL):
`CeleryDispatcher` sends a run's supervisor to the `gpu` queue; `ThreadDispatcher` (the embedded default,
`make demo` without a broker) runs it in a thread of this process, its attempts on this machine. Both drive
a run, or fine-tune a warm start, in the caller's thread for the foreground commands (`manage.py train`,
`manage.py warmstart`).

The web process loads this module when it starts a run, so it must not import torch: the driver and the
fine-tuning (which do) are imported inside the methods that run them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from celery import Celery
from django.conf import settings
from django.db import connections

from workers.celery import app as default_app
from workers.coordination import shared_client, supervisor_queued_key


class Dispatcher:
    """What both dispatchers share: the foreground paths (webapp.runs.dispatch.Dispatcher)."""

    def start(self, run_id: int) -> None:
        raise NotImplementedError

    def drive(self, run_id: int, *, observer_wrapper: Callable[[Any], Any] | None = None) -> Any:
        from workers.driver import run_supervise  # torch

        return run_supervise(run_id=run_id, observer_wrapper=observer_wrapper)

    def warm_start(self, *, request: Any, say: Callable[[str], None], on_step: Any = None) -> dict[str, Any]:
        from workers.fine_tuning import warm_start_create  # torch

        return warm_start_create(request=request, say=say, on_step=on_step)


class CeleryDispatcher(Dispatcher):
    """With a broker: the run's supervisor is a `practicum.supervise_run` task on the `gpu` queue."""

    def start(self, run_id: int) -> None:
        enqueue_supervisor(run_id)


class ThreadDispatcher(Dispatcher):
    """Without a broker: the run's supervisor is a thread of this process (the embedded default)."""

    def start(self, run_id: int) -> None:
        name = f"run-{run_id}"
        threading.Thread(target=supervise_in_thread, args=[run_id], name=name, daemon=True).start()


def enqueue_supervisor(run_id: int, *, app: Celery | None = None) -> None:
    """Send supervise_run (workers.tasks) to the `gpu` queue through `app` (workers.celery's by default) and
    mark it as waiting there (workers.recovery reads it)."""
    shared_client().set(supervisor_queued_key(run_id), "1", ex=settings.PRACTICUM_VISIBILITY_TIMEOUT_S)
    (app or default_app).send_task("practicum.supervise_run", args=[run_id], queue="gpu")


def supervise_in_thread(run_id: int) -> None:
    """The supervise task's body in a thread of its own, its attempts on this machine (LocalExecutor),
    closing that thread's database connections after."""
    from workers.supervision import supervise  # torch, through the driver

    try:
        supervise(run_id, distributed=False)
    finally:
        connections.close_all()
