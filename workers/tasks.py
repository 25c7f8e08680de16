"""Thin Celery tasks: take ids, re-fetch, call the services. torch is imported inside task bodies only."""

from __future__ import annotations

from celery import Task, shared_task


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, name="practicum.supervise_run")
def supervise_run(self: Task, run_id: int) -> str:
    """Drive a run to its end (or resume it from its newest checkpoint). Safe to redeliver: a run that is
    over, or already has a live supervisor, is left alone."""
    from workers.supervision import supervise

    return supervise(run_id)


ATTEMPT_OPTIONS = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}


@shared_task(bind=True, name="practicum.execute_attempt", **ATTEMPT_OPTIONS)
def execute_attempt(
    self: Task,
    *,
    run_id: int,
    key: str,
    slug: str,
    response: str,
    lease_s: float,
    max_tries: int,
    allow_gpu: bool = False,
    lm_markup: str | None = None,
    on_hidden_answers: bool = False,
) -> str:
    """Run one attempt in the sandbox and report it to the run's supervisor. Safe to redeliver: an attempt
    that already has a result is not run again (workers.attempts). One stopped by its soft time limit is
    recorded as a `timeout` (workers.attempts), not failed and run again. `lm_markup`: the supervisor's LM
    instrumentation of the program, used only if it passes this worker's checks. `on_hidden_answers`: a
    validation run's final grading, on the real competition."""
    from workers.attempts import AttemptOrder
    from workers.attempts import execute_attempt as execute

    soft_limit_s = (self.request.timelimit or (None, None))[1]
    order = AttemptOrder(
        run_id, key, slug, response, lease_s, max_tries, allow_gpu, soft_limit_s, lm_markup, on_hidden_answers
    )
    return execute(order)


@shared_task(name="practicum.prune_scratch")
def prune_scratch() -> int:
    """Apply the scratch retention policy (webapp.runs.retention); celery beat runs this every hour."""
    from webapp.runs.retention import scratch_prune

    return len(scratch_prune())


@shared_task(name="practicum.recover_runs")
def recover_runs() -> list[int]:
    """Start a supervisor for every active run that has none alive. celery beat sends this every
    PRACTICUM_RECOVERY_INTERVAL_S to the `control` queue, which no supervisor can hold up (workers.celery)."""
    from workers.recovery import recover_orphaned_runs

    return recover_orphaned_runs()
