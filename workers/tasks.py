"""Thin Celery tasks: take ids, re-fetch, call the services. torch is imported inside task bodies only."""

from __future__ import annotations

from celery import shared_task


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, name="practicum.supervise_run")
def supervise_run(self, run_id: int) -> None:
    """Drive a run to its end (or resume it from its newest checkpoint). Safe to redeliver."""
    from webapp.runs.models import Run
    from webapp.runs.supervisor import run_supervise

    run = Run.objects.filter(id=run_id).first()
    if run is None or not run.is_active:
        return
    run_supervise(run_id=run_id)
