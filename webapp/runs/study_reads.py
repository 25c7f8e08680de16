"""Reads for studies: who may see one (the runs' rule: the owner's, public ones, all for staff), its status
derived from its runs, and its statistics, which rl_core.studies computes from each run's training attempts.
The study page's data.json and GET /api/studies/<id>/ give the same `study_statistics`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, Exists, OuterRef, QuerySet

from rl_core import studies as stats
from rl_core.run_spec import RunConfig
from webapp.runs.models import Attempt, Run, Study
from webapp.runs.selectors import EVAL_PREFIX, FINAL_KIND, visible_to

COUNTED_AFTER_UPDATE = (
    "Counted: the attempts after the first policy update of each seed, at the same positions in every arm "
    "(so a static arm is compared where the learning arm's programs come from an updated policy)."
)
COUNTED_ALL = (
    "Counted: every training attempt, at the same positions in every arm (no arm updates its policy)."
)


def studies_visible_to(*, user: User | AnonymousUser) -> QuerySet[Study]:
    """The user's own studies and public ones; staff see all (the runs' rule)."""
    return visible_to(Study.objects.all(), user=user)


def study_get_visible(*, study_id: int, user: User | AnonymousUser) -> Study | None:
    return studies_visible_to(user=user).filter(id=study_id).first()


def studies_between_runs(*, owner: User | None = None) -> list[Study]:
    """The studies not cancelled that have made some but not all of their runs and have none
    active: between two runs (for a moment, or stalled because the supervisor that ended one died). With
    `owner`, only theirs."""
    active = Run.objects.filter(study=OuterRef("pk"), status__in=Run.ACTIVE_STATUSES)
    studies = Study.objects.filter(cancelled=False).exclude(Exists(active))
    studies = studies if owner is None else studies.filter(owner=owner)
    return [study for study in studies.annotate(made=Count("runs")) if 0 < study.made < planned_count(study)]


def widest_actors(study: Study) -> int:
    """The most attempts any of the study's runs keeps in flight: its arms' `actors`, or the base's."""
    base = int(study.config.get("actors", RunConfig.actors))
    return max((int(arm["settings"].get("actors", base)) for arm in study.arms), default=base)


def study_runs(study: Study) -> list[Run]:
    """The study's runs in the order they were made (seed-major)."""
    return list(study.runs.order_by("id"))


def study_status(study: Study, runs: Sequence[Run] | None = None) -> str:
    """cancelled (stopped by its owner), finished (every planned run made and ended), queued (nothing has
    started yet) or running."""
    runs = study_runs(study) if runs is None else runs
    if study.cancelled:
        return "cancelled"
    if any(run.status == Run.Status.RUNNING for run in runs):
        return "running"
    if len(runs) >= planned_count(study) and not any(run.is_active for run in runs):
        return "finished"
    return "queued" if all(run.status == Run.Status.QUEUED for run in runs) else "running"


def planned_count(study: Study) -> int:
    return len(study.arms) * len(study.seeds)


def study_is_active(study: Study) -> bool:
    return study_status(study) in ("queued", "running")


def study_summary(study: Study) -> dict[str, Any]:
    """A study in a list: its name, arms, seeds, status and how many of its planned runs have been made."""
    runs = study_runs(study)
    return {"id": study.id, "name": study.name, "owner": study.owner.username if study.owner else None,
            "arms": [a["name"] for a in study.arms], "seeds": list(study.seeds),
            "status": study_status(study, runs),
            "runs_made": len(runs), "planned": planned_count(study),
            "created_at": study.created_at.isoformat()}  # fmt: skip


def run_row(run: Run) -> dict[str, Any]:
    return {"id": run.id, "arm": run.study_arm, "seed": run.config.get("seed"), "status": run.status,
            "attempts_done": run.attempts_done}  # fmt: skip


def training_attempts(run: Run) -> QuerySet[Attempt]:
    """The run's finished training attempts in the order they finished: no evaluation or final grading, and
    none lost (its executor died: nothing the policy did)."""
    return (
        run.attempts.exclude(finished_at=None)
        .exclude(prompt_kind__startswith=EVAL_PREFIX)
        .exclude(prompt_kind=FINAL_KIND)
        .exclude(status=Attempt.Status.LOST)
        .order_by("finished_at", "number")
    )


def seed_arm(run: Run, *, arm: str | None = None) -> stats.SeedArm:
    """The run as rl_core.studies reads it, as `arm` (by default its study arm): each training attempt's
    validity, policy version, reward (an attempt without one, killed say, counts 0.0 and invalid) and seconds
    since the run started."""
    rows = list(training_attempts(run).values_list("valid", "policy_version", "reward", "finished_at"))
    t0 = run.started_at or (rows[0][3] if rows else None)
    return stats.SeedArm(
        arm=run.study_arm if arm is None else arm, seed=int(run.config.get("seed", 0)),
        valid=[bool(r[0]) for r in rows], versions=[r[1] for r in rows],
        rewards=[r[2] if r[2] is not None else 0.0 for r in rows],
        finished_s=[(r[3] - t0).total_seconds() for r in rows],
    )  # fmt: skip


def arm_settings(study: Study, arm: str) -> RunConfig:
    overrides: dict[str, Any] = next((a["settings"] for a in study.arms if a["name"] == arm), {})
    return RunConfig.from_dict(study.config | overrides)


def counts_after_first_update(study: Study) -> bool:
    """Whether the test counts only attempts after each seed's first update: when any arm updates its policy
    (before that, every arm samples the same starting policy)."""
    return any(arm_settings(study, a["name"]).updates for a in study.arms)


def study_statistics(study: Study, *, smoothing: float = 0.6) -> dict[str, Any]:
    """The study's runs, each arm's curves (against attempts and wall-clock, mean and 95% band over seeds),
    its valid rate per tenth of the budget, and every arm's test against the first (rl_core.studies)."""
    runs = study_runs(study)
    arms = [a["name"] for a in study.arms]
    seed_arms = [seed_arm(run) for run in runs if run.started_at is not None]
    by_arm = {arm: [s for s in seed_arms if s.arm == arm] for arm in arms}
    after_update = counts_after_first_update(study)
    grid = stats.time_grid(seed_arms)
    tests = stats.compare_arms(seed_arms, arms, after_first_update=after_update) if len(arms) > 1 else []
    return {
        "id": study.id, "name": study.name, "status": study_status(study, runs), "arms": arms,
        "seeds": list(study.seeds), "planned": planned_count(study), "runs": [run_row(r) for r in runs],
        "smoothing": smoothing, "after_first_update": after_update,
        "counted": COUNTED_AFTER_UPDATE if after_update else COUNTED_ALL,
        "curves": {arm: arm_payload(by_arm[arm], smoothing) for arm in arms},
        "time": {"grid": grid, "arms": {arm: arm_time_payload(by_arm[arm], smoothing, grid) for arm in arms}},
        "windows": {arm: arm_windows(study, arm, by_arm[arm]) for arm in arms},
        "tests": [test.as_dict() | {"words": verdict_in_words(test)} for test in tests],
    }  # fmt: skip


def arm_windows(study: Study, arm: str, runs: list[stats.SeedArm]) -> list[dict[str, Any]]:
    """The arm's valid rate per tenth of its attempt budget (per attempt, for a budget under 10), pooled over
    its seeds."""
    budget = arm_settings(study, arm).attempts
    return stats.windows(runs, count=min(10, budget), budget=budget)


def arm_payload(runs: list[stats.SeedArm], smoothing: float) -> dict[str, Any]:
    return {"seeds": len(runs), **stats.arm_curves(runs, smoothing)}


def arm_time_payload(runs: list[stats.SeedArm], smoothing: float, grid: list[float]) -> dict[str, Any]:
    return {"seeds": len(runs), **stats.arm_time_curves(runs, smoothing, grid)}


def verdict_in_words(test: stats.ArmTest) -> str:
    """The test's verdict in one sentence, at p < 0.05."""
    if not test.seeds or test.difference is None:
        return f"Not enough counted attempts yet to compare {test.arm} with {test.reference}."
    if test.p_value is None:
        return (
            f"No test possible yet: on every seed, the counted attempts of {test.arm} and {test.reference}"
            " are all valid, or all invalid."
        )
    if test.p_value >= 0.05:
        return f"No measurable difference between {test.arm} and {test.reference} at p < 0.05."
    higher, lower = (test.arm, test.reference) if test.difference > 0 else (test.reference, test.arm)
    return f"{higher}'s valid rate is higher than {lower}'s (p = {test.p_value:.3g} < 0.05)."
