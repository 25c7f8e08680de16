"""Every write to studies: start one, make its next run, advance it when a run ends, cancel it.

A study holds one run slot of its owner's quota: it is admitted once, when it starts, and its runs execute
one at a time in seed-major order (webapp.runs.study_plan), each made when the one before has ended
(`study_advance`, which the run's supervisor calls: workers.supervision; workers.recovery makes it for a
study whose supervisor died in between). Its next run is made without a quota check: between two runs the
study still holds its slot (quotas.user_usage counts a study between runs as an active run), so no other run
of its owner's can take it. Its runs are ordinary runs, made by services.run_create, so their pages, API
and live events are the runs' own.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from rl_core.run_spec import RunConfig
from webapp.competitions.models import Competition
from webapp.runs import quotas, services, study_reads
from webapp.runs.models import Run, Study
from webapp.runs.study_plan import Arm, Planned, StudyError, check_arms, seeds_from, study_plan
from webapp.runs.warmstarts import warm_start_check


def study_start(
    *, owner, competitions: list[Competition], config: dict[str, Any], arms: list[Arm], seeds: Any,
    name: str = "", is_public: bool = False,
) -> Study:  # fmt: skip
    """`study_admit_create`, then hand its first run to a supervisor once it commits. What the start form
    and POST /api/studies/ call."""
    with transaction.atomic():
        study = study_admit_create(
            owner=owner, competitions=competitions, config=config, arms=arms, seeds=seeds, name=name,
            is_public=is_public,
        )  # fmt: skip
        services.run_enqueue(run_id=study.runs.get().id)
    return study


def study_admit_create(
    *, owner, competitions: list[Competition], config: dict[str, Any], arms: list[Arm], seeds: Any,
    name: str = "", is_public: bool = False,
) -> Study:  # fmt: skip
    """Check every (seed, arm) configuration (StudyError names the seeds, or the arm and its setting), the
    warm starts and validation splits they need, admit the study once under its owner's quota (QuotaExceeded),
    and create it with its first run, queued and not enqueued (`manage.py train` drives it). A refused study
    stores nothing."""
    if not competitions:
        raise StudyError("competitions: a study needs at least one competition.", field="competitions")
    arms, seed_list = check_arms(arms), seeds_from(seeds)
    plan = study_plan(config, arms, seed_list)
    for planned in plan:
        checked = RunConfig.from_dict(planned.config)
        warm_start_check(config=checked, owner=owner)
        services.validation_check(config=checked, competitions=competitions)
    widest = max((RunConfig.from_dict(p.config) for p in plan), key=lambda c: c.actors)
    with transaction.atomic():
        quotas.run_admit(owner=owner, config=widest)
        study = Study.objects.create(
            owner=owner, name=name or default_name(arms, seed_list), is_public=is_public, seeds=seed_list,
            config=RunConfig.from_dict(config).to_dict(), arms=[arm.as_dict() for arm in arms],
        )  # fmt: skip
        study.competitions.set(competitions)
        create_planned_run(study, plan[0])
    return study


def default_name(arms: list[Arm], seeds: list[int]) -> str:
    """The name a study gets when it is given none: its arms and how many seeds.

    >>> default_name([Arm("static"), Arm("rl")], [0, 1])
    'static vs rl × 2 seeds'
    """
    return f"{' vs '.join(arm.name for arm in arms)} × {len(seeds)} seed{'s' if len(seeds) > 1 else ''}"


def create_planned_run(study: Study, planned: Planned) -> Run:
    """The planned run as an ordinary run of the study, queued, without a quota check (the study holds its
    slot), its warm start resolved as run_admit_create resolves it."""
    checked = RunConfig.from_dict(planned.config)
    run = services.run_create(
        owner=study.owner, competitions=list(study.competitions.all()), policy=checked.policy,
        config=planned.config, name=f"{study.name} · {planned.arm} · seed {planned.seed}",
        is_public=study.is_public, warm_start_from=warm_start_check(config=checked, owner=study.owner),
        study=study, study_arm=planned.arm,
    )  # fmt: skip
    return run


def study_planned(study: Study) -> list[Planned]:
    """Every run the study plans, in the order it makes them (its stored arms and seeds were checked)."""
    arms = [Arm(a["name"], a["settings"]) for a in study.arms]
    return study_plan(study.config, arms, list(study.seeds))


def study_next_run(study: Study) -> Run | None:
    """Make the study's next planned run (queued, not enqueued), or None when every one has been made."""
    made = {(run.config.get("seed"), run.study_arm) for run in study.runs.all()}
    following = next((p for p in study_planned(study) if (p.seed, p.arm) not in made), None)
    return create_planned_run(study, following) if following else None


def study_advance(*, run_id: int) -> Run | None:
    """After the run has ended: if it belongs to a study that is not cancelled and has no active run, make
    its next run and enqueue it. Returns that run, or None. Safe to call twice, or at once from two
    supervisors: the study's row is locked, so only one of them makes the next run."""
    study_id = Run.objects.filter(id=run_id).values_list("study_id", flat=True).first()
    if study_id is None:
        return None
    with transaction.atomic():
        run = study_continue(study_id=study_id)
        if run is not None:
            services.run_enqueue(run_id=run.id)
    return run


def study_continue(*, study_id: int) -> Run | None:
    """Lock the study and make its next run (queued, not enqueued) if it is not cancelled and none of its
    runs is active; None otherwise, or when every planned run has been made."""
    with transaction.atomic():
        study = Study.objects.select_for_update().get(id=study_id)
        if study.cancelled or study.runs.filter(status__in=Run.ACTIVE_STATUSES).exists():
            return None
        return study_next_run(study)


def studies_continue_stalled() -> list[Run]:
    """Make the next run of every study that stalled between two runs (the supervisor that ended one died
    before `study_advance`), queued: workers.recovery then finds it without a supervisor and starts one."""
    made = (study_continue(study_id=study.id) for study in study_reads.studies_between_runs())
    return [run for run in made if run is not None]


def study_cancel(*, study_id: int) -> Study:
    """Stop the study: no further run is made, and its active run is cancelled (its supervisor kills the
    attempts in flight)."""
    with transaction.atomic():
        study = Study.objects.select_for_update().get(id=study_id)
        study.cancelled = True
        study.save(update_fields=["cancelled"])
        active = list(study.runs.filter(status__in=Run.ACTIVE_STATUSES).values_list("id", flat=True))
    for run_id in active:
        services.run_cancel(run_id=run_id)
    return study
