"""The runs list: which runs to show (`?competition=SLUG&status=running`), in which order (`&sort=`), and each
run's best score with the metric it is in and that metric's direction.

Best scores are only comparable within one metric, so sorting by best score groups the runs by metric
(runs whose competitions use several metrics last) and ranks each group best first, whichever direction
its metric goes; runs without a valid score come last within their group.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Case, Count, F, Min, QuerySet, Value, When
from django.http import QueryDict

from rl_core.metrics import METRICS, Metric, get_metric
from webapp.competitions.models import Competition
from webapp.runs import selectors
from webapp.runs.models import Run

SORTS = {
    "newest": "newest first",
    "oldest": "oldest first",
    "best": "best score (within each metric)",
    "attempts": "most attempts",
}
"""`?sort=` values and how the page names them; the first is the default."""
LIMIT = 200


@dataclass(frozen=True)
class RunFilters:
    """What the runs list shows, read from its GET parameters; unknown values fall back to "all"."""

    competition: str = ""
    status: str = ""
    sort: str = "newest"

    @classmethod
    def from_query(cls, query: QueryDict) -> RunFilters:
        status = query.get("status", "")
        sort = query.get("sort", "")
        return cls(
            competition=query.get("competition", "").strip(),
            status=status if status in Run.Status.values else "",
            sort=sort if sort in SORTS else "newest",
        )


@dataclass(frozen=True)
class RunRow:
    """One run of the list and the metric its best score is in (None: its competitions use several)."""

    run: Run
    metric: Metric | None

    @property
    def direction(self) -> str:
        return self.metric.direction if self.metric else ""


def run_rows(*, user: User | AnonymousUser, filters: RunFilters) -> list[RunRow]:
    """The runs `user` may see that pass `filters`, in its order, at most LIMIT."""
    runs = selectors.runs_visible_to(user=user).select_related("owner").prefetch_related("competitions")
    if filters.competition:
        runs = runs.filter(competitions__slug=filters.competition)
    if filters.status:
        runs = runs.filter(status=filters.status)
    return [RunRow(run, run_metric(run)) for run in sorted_runs(runs, filters.sort)[:LIMIT]]


def sorted_runs(runs: QuerySet[Run], sort: str) -> QuerySet[Run]:
    if sort == "oldest":
        return runs.order_by("created_at", "id")
    if sort == "attempts":
        return runs.order_by("-attempts_done", "-created_at", "-id")
    if sort == "best":
        return sorted_by_best_score(runs)
    return runs.order_by("-created_at", "-id")


def sorted_by_best_score(runs: QuerySet[Run]) -> QuerySet[Run]:
    """Grouped by metric, each group best first (see the module docstring), in the database."""
    higher = [name for name, metric in METRICS.items() if metric.higher_is_better]
    runs = runs.annotate(
        metric_name=Min("competitions__metric"), metric_count=Count("competitions__metric", distinct=True)
    )
    ranked = Case(When(metric_name__in=higher, then=-F("best_score")), default=F("best_score"))
    mixed_last = Case(When(metric_count__gt=1, then=Value(1)), default=Value(0))
    return runs.order_by(mixed_last, "metric_name", ranked.asc(nulls_last=True), "-id")


def run_metric(run: Run) -> Metric | None:
    """The one metric of the run's competitions (prefetched), or None when they use several."""
    names = {competition.metric for competition in run.competitions.all()}
    return get_metric(names.pop()) if len(names) == 1 else None


def competition_choices(*, user: User | AnonymousUser) -> list[tuple[str, str]]:
    """(slug, name) of the competitions the filter offers: those with a run `user` may see."""
    runs = selectors.runs_visible_to(user=user)
    competitions = Competition.objects.filter(runs__in=runs).distinct().order_by("name")
    return list(competitions.values_list("slug", "name"))
