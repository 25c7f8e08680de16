"""What a Celery worker does once it is up (worker_ready). Celery imports this module in workers only
(workers.celery includes it), after Django is set up: the web process, which sends tasks with the same app,
never loads it.

A worker that consumes `gpu` restarts the supervisors of orphaned runs (workers.recovery); one that runs
attempts says which sandbox it has.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_ready

from rl_core.sandbox import isolation_level
from workers.recovery import recover_orphaned_runs

log = logging.getLogger(__name__)


@worker_ready.connect
def recover_when_ready(sender: Any, **kwargs: Any) -> None:
    """A worker that consumes `gpu` restarts the supervisors of orphaned runs as soon as it is up."""
    queues = set(sender.app.amqp.queues.consume_from or {})
    if "gpu" not in queues:
        return
    try:
        recovered = recover_orphaned_runs()
    except Exception:  # recovery must never keep a worker from starting
        log.exception("recovering orphaned runs failed")
        return
    if recovered:
        log.warning("restarted the supervisors of runs %s", recovered)


@worker_ready.connect
def report_isolation_when_ready(sender: Any, **kwargs: Any) -> None:
    """A worker that runs attempts says at start which sandbox it has (bubblewrap, or the weaker fallback,
    which rl_core.sandbox warns about), rather than at its first attempt."""
    queues = set(sender.app.amqp.queues.consume_from or {})
    if not queues & {"sandbox", "sandbox-gpu"}:
        return
    log.info("sandbox isolation on this worker: %s", isolation_level())
