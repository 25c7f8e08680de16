"""A run's supervisor as a Celery task: one at a time per run (a Redis lease renewed by a heartbeat), on
the CeleryExecutor when a broker is configured, on the LocalExecutor otherwise (the embedded default,
where dispatch runs this in a thread and there is no Redis to hold a lease in).

A supervisor that stalls for longer than its lease (a frozen machine, a paused VM) is presumed dead, and
recovery may start another, which takes the lease. When the stalled one wakes, its next heartbeat finds
the lease held by someone else: it stops driving the run within a result poll, quietly (no status change,
no attempt cancelled, no row written), and leaves everything to the new one. A lease that merely vanished
(Redis restarted empty) is taken again by the heartbeat and is not a takeover.
"""

from __future__ import annotations

import contextlib
import logging
import threading

from django.conf import settings

from rl_core.checkpoint_files import latest_checkpoint
from rl_core.stops import Superseded
from webapp import storage
from webapp.runs import selectors, studies
from workers.coordination import (
    REDIS_ERRORS,
    Heartbeat,
    Lease,
    shared_client,
    supervisor_lease_key,
    supervisor_queued_key,
)
from workers.driver import run_supervise
from workers.executor import celery_executor_for

log = logging.getLogger(__name__)


def supervise(run_id: int, *, distributed: bool | None = None) -> str:
    """Run (or resume) the run to its end: its attempts on Celery workers when `distributed` (by default:
    when a broker is configured), else on this machine. Returns "inactive", "busy" (another supervisor
    holds it), "superseded" (another took it over while this one ran) or "done". A run of a study that has
    ended ("done", "inactive", or failed) makes way for the study's next run (studies.study_advance); one
    that another supervisor holds ("busy", "superseded") has not ended."""
    try:
        outcome = drive_to_end(run_id, distributed=distributed)
    except Exception:
        studies.study_advance(run_id=run_id)  # a failed run does not hold up the rest of its study
        raise
    if outcome in ("done", "inactive"):
        studies.study_advance(run_id=run_id)
    return outcome


def drive_to_end(run_id: int, *, distributed: bool | None) -> str:
    """`supervise` without the study: "inactive", "busy", "superseded" or "done"."""
    if not selectors.run_is_active(run_id=run_id):
        return "inactive"
    if not (bool(settings.REDIS) if distributed is None else distributed):
        run_supervise(run_id=run_id)
        return "done"
    return supervise_with_lease(run_id)


def supervise_with_lease(run_id: int) -> str:
    """Drive the run while holding its supervisor lease. Returns "busy" (another supervisor holds it),
    "superseded" (another took it over meanwhile) or "done"."""
    client = shared_client()
    lease_s = settings.PRACTICUM_SUPERVISOR_LEASE_S
    lease = Lease(client, supervisor_lease_key(run_id), lease_s)
    if not lease.acquire():
        return "busy"
    client.delete(supervisor_queued_key(run_id))
    log_resume(run_id)
    superseded = threading.Event()
    try:
        with Heartbeat(lease, lease_s / 4, on_lost=superseded.set):
            executor = celery_executor_for(run_id, superseded=superseded)
            run_supervise(run_id=run_id, executor=executor, superseded=superseded)
    except Superseded:
        log.warning("run %s: another supervisor took it over; this one stops and leaves it the run", run_id)
        return "superseded"
    finally:
        with contextlib.suppress(*REDIS_ERRORS):
            lease.release()
    return "done"


def log_resume(run_id: int) -> None:
    """Say so in the worker's log when this supervisor takes over a run that has a checkpoint."""
    newest = latest_checkpoint(storage.run_checkpoints(run_id))
    if newest is not None:
        log.warning("run %s: resuming from checkpoint %s", run_id, newest.name)
