"""Reads for runs. Run visibility is decided here once, for pages, API, exports and websockets."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from webapp.competitions.models import Competition
from webapp.runs.models import Attempt, LearnerStep, Run
from webapp.runs.payloads import attempt_summary, learner_step_summary, run_summary

MAX_CHART_POINTS = 2000


def runs_visible_to(*, user: User | AnonymousUser) -> QuerySet[Run]:
    """The user's own runs and public ones; staff see all."""
    runs = Run.objects.all()
    if user.is_authenticated and user.is_staff:
        return runs
    if user.is_authenticated:
        return runs.filter(Q(is_public=True) | Q(owner=user))
    return runs.filter(is_public=True)


def run_get_visible(*, run_id: int, user: User | AnonymousUser) -> Run | None:
    return runs_visible_to(user=user).filter(id=run_id).first()


def run_is_visible_to(*, run_id: int, user: User | AnonymousUser) -> bool:
    return runs_visible_to(user=user).filter(id=run_id).exists()


def run_attempts(*, run: Run) -> QuerySet[Attempt]:
    return run.attempts.select_related("competition").order_by("number")


def run_metric_history(*, run: Run) -> list[dict[str, Any]]:
    return [learner_step_summary(step) for step in LearnerStep.objects.filter(run=run).order_by("version")]


def downsample(items: list, limit: int = MAX_CHART_POINTS) -> list:
    """At most `limit` items, evenly spaced, always keeping the last.

    >>> downsample(list(range(10)), 4)
    [0, 3, 6, 9]
    """
    if len(items) <= limit:
        return items
    step = (len(items) - 1) / (limit - 1)
    return [items[round(i * step)] for i in range(limit)]


HEAVY_FIELDS = ("response", "plan", "program", "instrumented_program", "stdout_tail", "stderr_tail", "info")
RECENT_IN_FULL = 200


def run_attempt_rows(*, run: Run) -> QuerySet[Attempt]:
    """The run's attempts in order, without their program and output text (what summaries need)."""
    return run_attempts(run=run).defer(*HEAVY_FIELDS)


def downsample_keeping_recent(
    items: list, limit: int = MAX_CHART_POINTS, recent: int = RECENT_IN_FULL
) -> list:
    """At most `limit` items: the newest `recent` in full, the older ones evenly spaced.

    >>> downsample_keeping_recent(list(range(20)), limit=6, recent=3)
    [0, 8, 16, 17, 18, 19]
    """
    if len(items) <= limit:
        return items
    return downsample(items[:-recent], limit - recent) + items[-recent:]


def attempt_stats(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over every finished attempt (not the downsampled ones): finished, valid, and per stage.

    >>> attempt_stats([{"status": "ok", "valid": True, "stages": ["imports_done"]}])["stages"]["imports_done"]
    1
    """
    finished = [a for a in summaries if a["status"] not in ("running", "lost")]
    stages: dict[str, int] = {}
    for attempt in finished:
        for stage in attempt["stages"]:
            stages[stage] = stages.get(stage, 0) + 1
    return {"finished": len(finished), "valid": sum(a["valid"] for a in finished), "stages": stages}


def best_score_steps(summaries: list[dict[str, Any]], *, higher_is_better: bool) -> list[dict[str, Any]]:
    """The attempts that improved the best valid score, in order of finishing: the exact best-score curve.

    >>> rows = [{"number": 1, "valid": True, "score": .5, "finished_at": "1"},
    ...         {"number": 2, "valid": True, "score": .4, "finished_at": "2"}]
    >>> [s["number"] for s in best_score_steps(rows, higher_is_better=True)]
    [1]
    """
    steps: list[dict[str, Any]] = []
    graded = [a for a in summaries if a["valid"] and a["score"] is not None]
    for attempt in sorted(graded, key=lambda a: a["finished_at"]):
        best = steps[-1]["score"] if steps else None
        if best is None or (attempt["score"] > best if higher_is_better else attempt["score"] < best):
            steps.append({k: attempt[k] for k in ("number", "score", "finished_at")})
    return steps


def run_snapshot(*, run: Run) -> dict[str, Any]:
    """Everything a run page needs to (re)draw itself, with chart history downsampled; the `seq` tells
    the page which live events it already includes. `stats` and `best_steps` cover every attempt."""
    run = Run.objects.select_related("owner").get(id=run.id)  # fresh, with the latest seq
    summary = run_summary(run)
    attempts = [attempt_summary(a) for a in run_attempt_rows(run=run)]
    return {
        "type": "snapshot",
        "seq": run.event_seq,
        "run": summary,
        "attempts": downsample_keeping_recent(attempts),
        "attempts_total": len(attempts),
        "stats": attempt_stats(attempts),
        "best_steps": best_score_steps(attempts, higher_is_better=summary["higher_is_better"]),
        "metrics": downsample(run_metric_history(run=run)),
    }


def runs_get_visible(*, run_ids: list[int], user: User | AnonymousUser) -> list[Run]:
    """The visible runs among `run_ids`, in the order asked; invisible or missing ids are left out."""
    runs = runs_visible_to(user=user).filter(id__in=run_ids).select_related("owner", "best_attempt")
    by_id = {r.id: r for r in runs.prefetch_related("competitions")}
    return [by_id[i] for i in dict.fromkeys(run_ids) if i in by_id]


def runs_on_competition(*, competition: Competition, user: User | AnonymousUser) -> QuerySet[Run]:
    return runs_visible_to(user=user).filter(competitions=competition).select_related("owner")


def attempt_get(*, run: Run, number: int) -> Attempt | None:
    return run_attempts(run=run).filter(number=number).first()


def competition_attempt_rows(*, competition: Competition, run_ids: list[int]) -> QuerySet[Attempt]:
    """The finished attempts of these runs on one competition, light (no program text)."""
    rows = Attempt.objects.filter(run_id__in=run_ids, competition=competition)
    rows = rows.exclude(status=Attempt.Status.RUNNING).order_by("run_id", "number")
    return rows.only("run_id", "number", "status", "valid", "score", "finished_at")
