"""Restarting the supervisors of runs whose supervisor died (its worker was killed, its machine lost).

A run is orphaned when it is queued or running, no supervisor holds its lease (it expires
PRACTICUM_SUPERVISOR_LEASE_S after the supervisor's last heartbeat), and no supervise_run task for it is
waiting in the broker (dispatch marks those). Each orphan gets a new supervise_run task, which resumes
from the run's newest checkpoint. Called when a `gpu` worker starts (workers.celery) and, through the
`practicum.recover_runs` task on the `control` queue, by celery beat every PRACTICUM_RECOVERY_INTERVAL_S
(a minute): without beat, a run whose supervisor died waits for the next gpu worker to start. Starting one
twice is harmless: the second finds the lease held. A study whose supervisor died after one run ended and
before it made the next (webapp.runs.studies.study_advance) has that next run made here, and started.
"""

from __future__ import annotations

from typing import Any

from webapp.runs import selectors, studies
from workers.coordination import shared_client, supervisor_lease_key, supervisor_queued_key
from workers.dispatch import enqueue_supervisor


def orphaned_runs() -> list[int]:
    client = shared_client()
    active = selectors.runs_active()
    return [
        run_id
        for run_id in active.values_list("id", flat=True)
        if not client.exists(supervisor_lease_key(run_id), supervisor_queued_key(run_id))
    ]


def recover_orphaned_runs(*, app: Any = None) -> list[int]:
    """Enqueue a supervisor for each orphaned run (through `app`, workers.celery's by default); returns
    their ids. A study that stalled between two runs gets its next run first, which is then one of them."""
    studies.studies_continue_stalled()
    orphans = orphaned_runs()
    for run_id in orphans:
        enqueue_supervisor(run_id, app=app)
    return orphans
