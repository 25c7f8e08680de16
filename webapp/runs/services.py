"""Every write to runs, attempts and learner steps. Each service commits its change and publishes the
live event for it (after commit), so browsers never see a row the database lacks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from rl_core.metrics import get_metric
from rl_core.outcome import AttemptOutcome, OutcomeStatus
from rl_core.run_spec import RunConfig
from webapp.competitions.models import Competition
from webapp.competitions.selectors import competition_validation_refusal
from webapp.runs import dispatch, events, quotas
from webapp.runs.models import Attempt, LearnerStep, Run, Study
from webapp.runs.payloads import attempt_summary, learner_step_summary, run_summary
from webapp.runs.selectors import FINAL_KIND
from webapp.runs.warmstarts import warm_start_check


def run_create(
    *,
    owner,
    competitions: list[Competition],
    policy: str,
    config: dict[str, Any],
    name: str = "",
    is_public: bool = False,
    cloned_from: Run | None = None,
    warm_start_from: Run | None = None,
    study: Study | None = None,
    study_arm: str = "",
) -> Run:
    if not competitions:
        raise ValueError("A run needs at least one competition.")
    with transaction.atomic():
        run = Run.objects.create(
            owner=owner,
            name=name or f"{policy} on {', '.join(c.slug for c in competitions)}",
            policy=policy,
            config=config,
            is_public=is_public,
            cloned_from=cloned_from,
            warm_start_from=warm_start_from,
            study=study,
            study_arm=study_arm,
        )
        run.competitions.set(competitions)
        events.publish(run.id, "run", {"run": run_summary(run)})
    return run


def run_set_status(*, run_id: int, status: str, error: str = "") -> Run:
    """Move a run to `status`; a run already finished, failed or cancelled stays as it is."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        if run.status in Run.FINAL_STATUSES:
            return run
        run.status = status
        now = timezone.now()
        if status == Run.Status.RUNNING and run.started_at is None:
            run.started_at = now
        if status in Run.FINAL_STATUSES:
            run.finished_at = now
        if error:
            run.error = error
        run.save(update_fields=["status", "started_at", "finished_at", "error"])
        events.publish(run.id, "run", {"run": run_summary(run)})
    return run


def run_cancel(*, run_id: int) -> Run:
    """Mark the run cancelled; its supervisor sees this and kills the attempts in flight."""
    return run_set_status(run_id=run_id, status=Run.Status.CANCELLED)


def attempt_start(
    *, run_id: int, key: str, competition: Competition, sample_fields: dict[str, Any], policy_version: int
) -> Attempt:
    """Record a dispatched attempt. Idempotent by `key`: a re-dispatch after a restart counts a new try.
    Numbers are given under a lock on the run, so attempts started at once still get 1, 2, 3, ..."""
    with transaction.atomic():
        Run.objects.select_for_update().only("id").get(id=run_id)
        attempt = Attempt.objects.select_for_update().filter(run_id=run_id, key=key).first()
        if attempt is not None:
            if not attempt.is_finished:
                attempt.tries += 1
                attempt.save(update_fields=["tries"])
            return attempt
        number = Attempt.objects.filter(run_id=run_id).count() + 1
        attempt = Attempt.objects.create(
            run_id=run_id,
            key=key,
            competition=competition,
            policy_version=policy_version,
            started_at=timezone.now(),
            number=number,
            tries=1,
            **storable(sample_fields),
        )
        events.publish(run_id, "attempt", {"attempt": attempt_summary(attempt)})
    return attempt


def attempt_finish(*, run_id: int, key: str, outcome: AttemptOutcome, staleness: int) -> Attempt:
    """Store an attempt's outcome once; a duplicate delivery of the same result changes nothing. Its event
    says whether it improved the run's best score (`improves_best`), so the run page need not judge."""
    return _attempt_close(
        run_id=run_id, key=key, staleness=staleness, write=lambda attempt: _write_outcome(attempt, outcome)
    )


def _attempt_close(*, run_id: int, key: str, staleness: int, write: Callable[[Attempt], None]) -> Attempt:
    """Finish the attempt once (`write` fills in its result), count it, track the run's best, publish."""
    with transaction.atomic():
        attempt = (
            Attempt.objects.select_for_update().select_related("competition").get(run_id=run_id, key=key)
        )
        if attempt.is_finished:
            return attempt
        write(attempt)
        attempt.staleness = staleness
        attempt.finished_at = timezone.now()
        attempt.save()
        run = Run.objects.select_for_update().get(id=run_id)
        run.attempts_done += 1
        improved = attempt.valid and attempt.score is not None and improves(run, attempt)
        if improved:
            run.best_score, run.best_attempt = attempt.score, attempt
        run.save(update_fields=["attempts_done", "best_score", "best_attempt"])
        events.publish(
            run_id, "attempt",
            {"attempt": attempt_summary(attempt), "best_score": run.best_score, "improves_best": improved},
        )  # fmt: skip
    return attempt


def _write_outcome(attempt: Attempt, outcome: AttemptOutcome) -> None:
    """Copy `outcome` onto the attempt's row, its text made storable."""
    attempt.status = outcome.status
    attempt.exit_code = outcome.exit_code
    attempt.duration_s = outcome.duration_s
    attempt.stages = storable(list(outcome.stages))
    attempt.valid = outcome.valid
    attempt.score = outcome.score
    attempt.grade_error = storable(outcome.grade_error or "")
    attempt.reward = outcome.reward
    attempt.isolation = storable(outcome.isolation)
    attempt.stdout_tail = storable(outcome.stdout_tail)
    attempt.stderr_tail = storable(outcome.stderr_tail)
    attempt.plan = storable(outcome.plan)
    attempt.program = storable(outcome.program)
    attempt.instrumented_program = storable(outcome.instrumented_program)
    attempt.instrumentation = outcome.instrumentation


def final_grade_record(
    *, run_id: int, competition: Competition, key: str, parent_key: str, response: str,
    outcome: AttemptOutcome, policy_version: int,
) -> Attempt:  # fmt: skip
    """Store a validation run's one grading of its chosen program on `competition`'s hidden answers: an
    attempt of prompt kind "final", graded on the hidden answers, outside the run's attempt count and its
    best (validation) score. For a run on one competition it is the run's final score. Idempotent by `key`."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        attempt = Attempt.objects.filter(run_id=run_id, key=key).first()
        if attempt is None:
            now = timezone.now()
            attempt = Attempt(
                run_id=run_id, key=key, competition=competition, prompt_kind=FINAL_KIND, answers="hidden",
                parent_key=parent_key, policy_version=policy_version, staleness=0, started_at=now,
                finished_at=now, number=Attempt.objects.filter(run_id=run_id).count() + 1, tries=1,
                response=storable(response),
            )  # fmt: skip
            _write_outcome(attempt, outcome)
            attempt.save()
        if run.competitions.count() == 1:
            run_set_final(run, score=attempt.score if attempt.valid else None, attempt=attempt)
    return attempt


def run_final_from_best(*, run_id: int) -> Run:
    """A hidden-answer run's result is its best score, which the hidden answers graded already."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        run_set_final(run, score=run.best_score, attempt=run.best_attempt)
    return run


def run_set_final(run: Run, *, score: float | None, attempt: Attempt | None) -> None:
    """Save `run`'s result (inside the caller's transaction, the run row locked) and publish it."""
    run.final_score, run.final_valid, run.final_attempt = score, score is not None, attempt
    run.save(update_fields=["final_score", "final_valid", "final_attempt"])
    events.publish(run.id, "run", {"run": run_summary(run)})


def run_record_hardware(*, run_id: int, hardware: str) -> None:
    """Where the run's policy runs ('CPU (2 cores)', 'GPU (NVIDIA H100)'), for leaderboards' compute."""
    Run.objects.filter(id=run_id).update(hardware=hardware[:120])


def storable(value: Any) -> Any:
    """`value` with every NUL character replaced by U+FFFD, in strings and inside lists and dicts: text a
    program printed or a model sampled may hold NULs, which PostgreSQL text and jsonb cannot store.

    >>> storable({"stdout_tail": "a" + chr(0) + "b", "stages": [chr(0)], "score": 0.5})
    {'stdout_tail': 'a�b', 'stages': ['�'], 'score': 0.5}
    """
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(storable(v) for v in value)
    return value


def improves(run: Run, attempt: Attempt) -> bool:
    """Whether the attempt's score beats the run's best, by rl_core.metrics.is_better."""
    if run.best_score is None:
        return True
    return get_metric(attempt.competition.metric).better(attempt.score, run.best_score)


def attempt_abandon(*, run_id: int, key: str, status: OutcomeStatus, reason: str) -> Attempt:
    """Close an attempt that produced no result: `lost` (its executor died too often; excluded from
    learning) or `killed` (its run was cancelled). Only its status, reason (stderr), validity and reward
    are written: nothing ran to have a duration or an instrumentation."""

    def write(attempt: Attempt) -> None:
        attempt.status, attempt.stderr_tail = status, storable(reason)
        attempt.valid, attempt.reward = False, None

    return _attempt_close(run_id=run_id, key=key, staleness=0, write=write)


def run_warm_start_progress(*, run_id: int, progress: dict[str, Any]) -> None:
    """Record where the run's warm-start phase is (workers.fine_tuning.WarmStartProgress) and publish
    the run, whose page draws the progress bar and the loss curve from it."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        run.warm_start_progress = progress
        run.save(update_fields=["warm_start_progress"])
        events.publish(run_id, "run", {"run": run_summary(run)})


def learner_step_record(
    *, run_id: int, version: int, metrics: dict[str, float], wall_s: float
) -> LearnerStep:
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        step, created = LearnerStep.objects.get_or_create(
            run=run,
            version=version,
            defaults={"metrics": metrics, "attempts_done": run.attempts_done, "wall_s": wall_s},
        )
        if created and version > run.policy_version:
            run.policy_version = version
            run.save(update_fields=["policy_version"])
        if created:
            events.publish(run_id, "metrics", {"step": learner_step_summary(step)})
    return step


def run_enqueue(*, run_id: int) -> None:
    """Hand the run to a supervisor once this transaction commits (webapp.runs.dispatch)."""
    dispatch.run_enqueue(run_id=run_id)


def run_start(
    *,
    owner,
    competitions: list[Competition],
    config: dict[str, Any],
    name: str = "",
    is_public: bool = False,
    cloned_from: Run | None = None,
) -> Run:
    """`run_admit_create`, then hand the run to a supervisor once it commits. What the UI's start and clone
    forms and the API's POST /api/runs/ call."""
    with transaction.atomic():
        run = run_admit_create(
            owner=owner, competitions=competitions, config=config, name=name, is_public=is_public,
            cloned_from=cloned_from,
        )  # fmt: skip
        run_enqueue(run_id=run.id)
    return run


def run_admit_create(
    *,
    owner,
    competitions: list[Competition],
    config: dict[str, Any],
    name: str = "",
    is_public: bool = False,
    cloned_from: Run | None = None,
) -> Run:
    """Check `config` (ValueError names the field; what its warm start names is checked by
    warmstarts.warm_start_check), admit the run under its owner's quotas (QuotaExceeded, a ValueError saying
    which limit and what to do; webapp.runs.quotas), and create it, queued. A refused run leaves nothing
    behind. `manage.py train` drives what this returns in the foreground."""
    checked = RunConfig.from_dict(config)
    source = warm_start_check(config=checked, owner=owner)
    validation_check(config=checked, competitions=competitions)
    with transaction.atomic():
        quotas.run_admit(owner=owner, config=checked)
        return run_create(
            owner=owner, competitions=competitions, policy=checked.policy, config=checked.to_dict(),
            name=name, is_public=is_public, cloned_from=cloned_from, warm_start_from=source,
        )  # fmt: skip


def validation_check(*, config: RunConfig, competitions: list[Competition]) -> None:
    """A validation run needs a validation split of each of its competitions: ValueError naming the first
    that has none, and why (it offers only the hidden answers)."""
    if config.reward_source != "validation":
        return
    settings = config.validation_settings()
    for competition in competitions:
        reason = competition_validation_refusal(competition=competition, settings=settings)
        if reason:
            raise ValueError(
                f"config: reward_source: {competition.slug!r} offers only 'hidden' (no validation split: "
                f"{reason})."
            )


def attempt_note_try(*, run_id: int, key: str, tries: int) -> None:
    """Record that a worker started execution number `tries` of the attempt (a redelivery after its worker
    died). Only ever raises the count; an attempt not yet recorded, or already finished, is left alone."""
    with transaction.atomic():
        attempt = (
            Attempt.objects.select_for_update()
            .filter(run_id=run_id, key=key, status=Attempt.Status.RUNNING, tries__lt=tries)
            .first()
        )
        if attempt is None:
            return
        attempt.tries = tries
        attempt.save(update_fields=["tries"])
        events.publish(run_id, "attempt", {"attempt": attempt_summary(attempt)})
