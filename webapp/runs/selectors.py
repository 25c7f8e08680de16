"""Reads for runs. Run visibility is decided here once, for pages, API, exports and websockets."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

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


def run_snapshot(*, run: Run) -> dict[str, Any]:
    """Everything a run page needs to (re)draw itself, with chart history downsampled; the `seq` tells
    the page which live events it already includes."""
    run = Run.objects.select_related("owner").get(id=run.id)  # fresh, with the latest seq
    attempts = [attempt_summary(a) for a in run_attempts(run=run)]
    return {
        "type": "snapshot",
        "seq": run.event_seq,
        "run": run_summary(run),
        "attempts": downsample(attempts),
        "attempts_total": len(attempts),
        "metrics": downsample(run_metric_history(run=run)),
    }
