"""A run's supervisor as a Celery task: one at a time per run (a Redis lease renewed by a heartbeat), on
the CeleryExecutor when a broker is configured, on the LocalExecutor otherwise (the embedded default,
where dispatch runs this in a thread and there is no Redis to hold a lease in)."""

from __future__ import annotations

import contextlib
import logging

from django.conf import settings

from workers.coordination import (
    REDIS_ERRORS,
    Heartbeat,
    Lease,
    shared_client,
    supervisor_lease_key,
    supervisor_queued_key,
)
from workers.options import option

log = logging.getLogger(__name__)


def supervise(run_id: int, *, distributed: bool | None = None) -> str:
    """Run (or resume) the run to its end: its attempts on Celery workers when `distributed` (by default:
    when a broker is configured), else on this machine. Returns "inactive", "busy" (another supervisor
    holds it) or "done"."""
    from webapp.runs.models import Run
    from webapp.runs.supervisor import run_supervise

    run = Run.objects.filter(id=run_id).first()
    if run is None or not run.is_active:
        return "inactive"
    if not (bool(settings.REDIS) if distributed is None else distributed):
        run_supervise(run_id=run_id)
        return "done"
    return supervise_with_lease(run_id)


def supervise_with_lease(run_id: int) -> str:
    from webapp.runs.supervisor import run_supervise
    from workers.executor import celery_executor_for

    client = shared_client()
    lease_s = option("PRACTICUM_SUPERVISOR_LEASE_S")
    lease = Lease(client, supervisor_lease_key(run_id), lease_s)
    if not lease.acquire():
        return "busy"
    client.delete(supervisor_queued_key(run_id))
    log_resume(run_id)
    try:
        with Heartbeat(lease, lease_s / 4):
            run_supervise(run_id=run_id, executor=celery_executor_for(run_id))
    finally:
        with contextlib.suppress(*REDIS_ERRORS):
            lease.release()
    return "done"


def log_resume(run_id: int) -> None:
    """Say so in the worker's log when this supervisor takes over a run that has a checkpoint."""
    from rl_core.checkpoint import latest_checkpoint
    from webapp import storage

    newest = latest_checkpoint(storage.run_checkpoints(run_id))
    if newest is not None:
        log.warning("run %s: resuming from checkpoint %s", run_id, newest.name)
