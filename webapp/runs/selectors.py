"""Reads for runs. Run visibility is decided here once, for pages, API, exports and websockets; so are
whether a run is active or cancelled (`runs_active`, `run_is_active`, `run_is_cancelled`), for the web
layer and the workers alike, which read runs only through this module."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet

from rl_core.checkpoint_files import latest_checkpoint
from rl_core.instrument import STAGE_LABELS, STAGES
from rl_core.metrics import get_metric, is_better
from rl_core.run_spec import RunConfig
from rl_core.warmstart.folders import list_warm_starts
from webapp import storage
from webapp.competitions.models import Competition
from webapp.competitions.selectors import competitions_visible_to
from webapp.runs.models import Attempt, LearnerStep, Run
from webapp.runs.payloads import (
    ATTEMPT_POINT_FIELDS,
    attempt_point,
    attempt_summary,
    learner_step_summary,
    run_summary,
)

# A snapshot is one websocket message, and daphne (autobahn) refuses to send one over 1 MiB; these
# bounds keep a run page's snapshot near 0.6 MB however long the run (bench/dashboard_load.py shows it).
MAX_CHART_POINTS = 1000
MAX_METRIC_POINTS = 500


def runs_visible_to(*, user: User | AnonymousUser) -> QuerySet[Run]:
    """The user's own runs and public ones; staff see all."""
    return visible_to(Run.objects.all(), user=user)


def visible_to(rows: QuerySet[Any], *, user: User | AnonymousUser) -> QuerySet[Any]:
    """Of `rows` (runs or studies: an owner and is_public each), the user's own and the public ones; staff see
    all."""
    if user.is_authenticated and user.is_staff:
        return rows
    if user.is_authenticated:
        return rows.filter(Q(is_public=True) | Q(owner=user))
    return rows.filter(is_public=True)


def run_get_visible(*, run_id: int, user: User | AnonymousUser) -> Run | None:
    return runs_visible_to(user=user).filter(id=run_id).first()


def run_is_visible_to(*, run_id: int, user: User | AnonymousUser) -> bool:
    return runs_visible_to(user=user).filter(id=run_id).exists()


def run_showcase_for(*, user: User | AnonymousUser) -> Run | None:
    """The run the home page points to: the newest active run `user` may see (the demo's, in `make demo`),
    else the newest finished one; None when there is neither."""
    visible = runs_visible_to(user=user).order_by("-created_at", "-id")
    active = visible.filter(status__in=Run.ACTIVE_STATUSES).first()
    return active or visible.filter(status=Run.Status.FINISHED).first()


def runs_active() -> QuerySet[Run]:
    """The runs that are queued or running (Run.ACTIVE_STATUSES), oldest first."""
    return Run.objects.filter(status__in=Run.ACTIVE_STATUSES).order_by("id")


def run_is_active(*, run_id: int) -> bool:
    """Whether the run exists and is queued or running: whether a worker should still work on it."""
    return runs_active().filter(id=run_id).exists()


def run_is_cancelled(*, run_id: int) -> bool:
    """Whether whatever drives the run must stop because it was cancelled. A run that no longer exists
    (deleted) counts as cancelled: its attempts went with it, so nothing more can be recorded for it."""
    return not Run.objects.filter(id=run_id).exclude(status=Run.Status.CANCELLED).exists()


def run_get(*, run_id: int) -> Run | None:
    return Run.objects.filter(id=run_id).first()


def run_config(*, run_id: int) -> RunConfig:
    """The settings of an existing run (Run.DoesNotExist otherwise)."""
    return RunConfig.from_dict(Run.objects.get(id=run_id).config)


def run_competitions(*, run_id: int) -> list[Competition]:
    """The run's competitions, by slug."""
    return list(Competition.objects.filter(runs__id=run_id).order_by("slug"))


def attempt_get_by_key(*, run_id: int, key: str) -> Attempt | None:
    """The attempt the loop calls `key` (its attempt id), or None when it has not been recorded."""
    return Attempt.objects.filter(run_id=run_id, key=key).first()


EVAL_PREFIX = "eval-"
"""The prompt kinds of evaluation attempts (RunConfig.final_evaluation): "eval-solve" and "eval-improve"."""
EVALUATION_FIELDS = ("solve_score", "improve_score", "score", "attempt_id", "attempt_number")


def run_evaluation(*, run: Run) -> dict[str, dict[str, Any]]:
    """slug -> the final policy's evaluation on that competition (RunConfig.final_evaluation): the solve and
    improve attempts' scores (None where invalid or not run) and the better of them, kept as the result
    ("score", "attempt_id", "attempt_number"; the solve attempt's on a tie). {} for a run not evaluated."""
    results: dict[str, dict[str, Any]] = {}
    attempts = run.attempts.filter(prompt_kind__startswith=EVAL_PREFIX).select_related("competition")
    for attempt in attempts.order_by("number"):
        slug = attempt.competition.slug
        entry = results.setdefault(slug, dict.fromkeys(EVALUATION_FIELDS))
        score = attempt.score if attempt.valid else None
        entry[f"{attempt.prompt_kind.removeprefix(EVAL_PREFIX)}_score"] = score
        better = get_metric(attempt.competition.metric).better
        if score is not None and (entry["score"] is None or better(score, entry["score"])):
            entry |= {"score": score, "attempt_id": attempt.id, "attempt_number": attempt.number}
    return results


def run_scores_untrustworthy(*, run: Run) -> bool:
    """Whether some of the run's attempts ran where the sandbox could not hide the answers (isolation
    ``"unisolated"``), or its next ones would here: the operator opted in with PRACTICUM_ALLOW_UNISOLATED
    and this machine's sandbox is unisolated. Attempts run by workers elsewhere show once recorded."""
    from django.conf import settings

    from rl_core.sandbox import isolation_level, scores_trustworthy

    if run.attempts.filter(isolation="unisolated").exists():
        return True
    return settings.PRACTICUM_ALLOW_UNISOLATED and not scores_trustworthy(isolation_level())


def run_attempts(*, run: Run) -> QuerySet[Attempt]:
    return run.attempts.select_related("competition").order_by("number")


def run_learner_steps(*, run: Run) -> QuerySet[LearnerStep]:
    """The run's learner updates, oldest policy version first."""
    return LearnerStep.objects.filter(run=run).order_by("version")


def run_metric_history(*, run: Run) -> list[dict[str, Any]]:
    return [learner_step_summary(step) for step in run_learner_steps(run=run)]


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


def attempt_stats(groups: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over finished attempts: finished, valid, and per stage, from rows that each stand for
    `count` attempts with the same `valid` and `stages`.

    >>> attempt_stats([{"valid": True, "stages": ["imports_done"], "count": 3},
    ...                {"valid": False, "stages": [], "count": 1}])
    {'finished': 4, 'valid': 3, 'stages': {'imports_done': 3}}
    """
    stages: dict[str, int] = {}
    for group in groups:
        for stage in group["stages"]:
            stages[stage] = stages.get(stage, 0) + group["count"]
    finished = sum(group["count"] for group in groups)
    return {"finished": finished, "valid": sum(g["count"] for g in groups if g["valid"]), "stages": stages}


def best_score_steps(graded: list[dict[str, Any]], *, higher_is_better: bool) -> list[dict[str, Any]]:
    """The rows that improved the best score, from graded attempts in order of finishing.

    >>> rows = [{"number": 1, "score": .5}, {"number": 2, "score": .4}, {"number": 3, "score": .6}]
    >>> [s["number"] for s in best_score_steps(rows, higher_is_better=True)]
    [1, 3]
    """
    steps: list[dict[str, Any]] = []
    for row in graded:
        if not steps or is_better(row["score"], steps[-1]["score"], higher_is_better=higher_is_better):
            steps.append(row)
    return steps


def run_snapshot(*, run: Run) -> dict[str, Any]:
    """Everything a run page needs to (re)draw itself; the `seq` tells the page which live events it already
    includes, and `stages` names the instrumentation stages in order (rl_core.instrument; their words in
    `stage_labels`), so the page draws them without a list of its own. Bounded in size and cost however long
    the run: `attempts` holds at most MAX_CHART_POINTS (the newest RECENT_IN_FULL as full summaries, older
    ones evenly spaced as chart points) and `metrics` at most MAX_METRIC_POINTS updates; `stats` and
    `best_steps` are exact over every attempt, counted in the database rather than over model instances.

    Every part is read from one database snapshot together with `seq` (`one_snapshot`), so an attempt
    finishing meanwhile is either in the counts with its event's seq <= `seq`, or in neither: the page,
    which applies only events above `seq`, never counts it twice."""
    with one_snapshot():
        run = Run.objects.select_related("owner").get(id=run.id)  # the first read fixes the snapshot
        summary = run_summary(run)
        ids = list(run.attempts.order_by("number").values_list("id", flat=True))
        return {
            "type": "snapshot",
            "seq": run.event_seq,
            "run": summary,
            "attempts": snapshot_attempts(run=run, ids=ids),
            "attempts_total": len(ids),
            "stats": run_attempt_stats(run=run),
            "best_steps": run_best_score_steps(run=run, higher_is_better=summary["higher_is_better"]),
            "metrics": run_metric_points(run=run),
            "stages": list(STAGES),
            "stage_labels": STAGE_LABELS,
        }


@contextmanager
def one_snapshot() -> Iterator[None]:
    """Make every query inside read the database as of one moment, the first query's.

    On PostgreSQL: a read-only transaction at REPEATABLE READ, whose snapshot is taken at its first query
    (at the default READ COMMITTED each query would see whatever committed just before it). On SQLite a
    transaction already reads one snapshot. Live events are consistent with it because webapp.runs.events
    takes an event's seq in the transaction that makes its change, under the run row's lock: a snapshot
    sees a change exactly when it sees that change's seq. Inside a transaction the caller already opened,
    its isolation can no longer be chosen; the queries then simply run in it.
    """
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def snapshot_attempts(*, run: Run, ids: list[int]) -> list[dict[str, Any]]:
    """The attempts with these ids (the run's, in order), downsampled: full summaries for the newest
    RECENT_IN_FULL (the live table shows them), chart points for the older ones."""
    chosen = downsample_keeping_recent(ids)
    recent = set(ids[-RECENT_IN_FULL:])
    full = {a.id: attempt_summary(a) for a in run_attempt_rows(run=run).filter(id__in=recent)}
    rows = run.attempts.filter(id__in=set(chosen) - recent).values(*ATTEMPT_POINT_FIELDS)
    points = {row["id"]: attempt_point(row) for row in rows}
    return [item for i in chosen if (item := full.get(i) or points.get(i))]


FINAL_KIND = "final"
"""The prompt kind of a validation run's final gradings (workers.driver.record_final)."""


def run_trained_attempts(*, run: Run) -> QuerySet[Attempt]:
    """The run's attempts but its final gradings: those its reward source graded."""
    return run.attempts.exclude(prompt_kind=FINAL_KIND)


def run_attempt_stats(*, run: Run) -> dict[str, Any]:
    """`attempt_stats` over the run's finished attempts (lost ones and a validation run's final gradings,
    scored on other answers, excluded), grouped in the database."""
    finished = run_trained_attempts(run=run).exclude(status__in=(Attempt.Status.RUNNING, Attempt.Status.LOST))
    # order_by() drops the model's default ordering, which would otherwise split the groups.
    groups = finished.values("valid", "stages").annotate(count=Count("id")).order_by()
    return attempt_stats(list(groups))


def run_best_score_steps(*, run: Run, higher_is_better: bool) -> list[dict[str, Any]]:
    """Every improvement of the run's best valid score, in order of finishing: the exact best-score
    curve, as {number, score, finished_at (ISO 8601)}; a validation run's final gradings are no part of it."""
    graded = (
        run_trained_attempts(run=run)
        .filter(valid=True, score__isnull=False)
        .order_by("finished_at", "number")
    )
    steps = best_score_steps(list(graded.values("number", "score")), higher_is_better=higher_is_better)
    finished = dict(
        graded.filter(number__in=[s["number"] for s in steps]).values_list("number", "finished_at")
    )
    return [{**step, "finished_at": finished[step["number"]].isoformat()} for step in steps]


def run_metric_points(*, run: Run) -> list[dict[str, Any]]:
    """The run's learner updates for its charts: at most MAX_METRIC_POINTS, evenly spaced, the newest kept."""
    steps = run_learner_steps(run=run)
    versions = list(steps.values_list("version", flat=True))
    chosen = steps.filter(version__in=downsample(versions, MAX_METRIC_POINTS))
    return [learner_step_summary(step) for step in chosen]


def runs_get_visible(*, run_ids: list[int], user: User | AnonymousUser) -> list[Run]:
    """The visible runs among `run_ids`, in the order asked; invisible or missing ids are left out."""
    runs = runs_visible_to(user=user).filter(id__in=run_ids).select_related("owner", "best_attempt")
    by_id = {r.id: r for r in runs.prefetch_related("competitions")}
    return [by_id[i] for i in dict.fromkeys(run_ids) if i in by_id]


def runs_on_competition(*, competition: Competition, user: User | AnonymousUser) -> QuerySet[Run]:
    return runs_visible_to(user=user).filter(competitions=competition).select_related("owner")


def attempt_get(*, run: Run, number: int) -> Attempt | None:
    return run_attempts(run=run).filter(number=number).first()


def attempt_neighbour_numbers(*, attempt: Attempt) -> tuple[int | None, int | None]:
    """The numbers of the run's attempts just before and just after this one; None at either end."""
    numbers = Attempt.objects.filter(run_id=attempt.run_id).values_list("number", flat=True)
    before = numbers.filter(number__lt=attempt.number).order_by("-number").first()
    after = numbers.filter(number__gt=attempt.number).order_by("number").first()
    return before, after


def adapters_root() -> Path:
    """Where warm starts live: PRACTICUM_DATA_DIR/adapters/<name>/ (rl_core.warmstart.folders: a folder)."""
    return storage.data_root() / "adapters"


def warm_start_dir(*, name_or_path: str) -> Path:
    """The folder of a warm start given by its name under `adapters_root`, or by a path (anything with a
    slash, or starting with '.' or '~'). ValueError for a name that cannot be a folder name."""
    if "/" in name_or_path or name_or_path.startswith((".", "~")):
        return Path(name_or_path).expanduser()
    return adapters_root() / storage.safe_name(name_or_path)


def warm_starts_list() -> list[dict[str, Any]]:
    """Every stored warm start, newest first: its manifest (what it was trained on) plus name and path."""
    return list_warm_starts(adapters_root())


def warm_starts_visible_to(*, user: User | AnonymousUser | None) -> list[dict[str, Any]]:
    """The stored warm starts a user may see and start from: those trained only on competitions they can
    see (a warm start learned from a competition's data). None (the operator) sees every one."""
    if user is None:
        return warm_starts_list()
    visible = set(competitions_visible_to(user=user).values_list("slug", flat=True))
    return [w for w in warm_starts_list() if set(w.get("competitions", [])) <= visible]


def warm_start_choices(*, user: User | AnonymousUser, recent: int = 30) -> list[tuple[str, str]]:
    """(RunConfig.warm_start value, label) for the start form: the stored warm starts the user may see,
    then their `recent` newest visible runs that have a checkpoint (a run can start from one's final
    policy)."""
    stored = [(w["name"], warm_start_label(w)) for w in warm_starts_visible_to(user=user)]
    runs = runs_visible_to(user=user).order_by("-created_at")[:recent]
    with_checkpoint = [r for r in runs if latest_checkpoint(storage.run_checkpoints(r.id)) is not None]
    return stored + [(f"run:{r.id}", f"run #{r.id}'s final policy: {r.name}") for r in with_checkpoint]


def warm_start_label(manifest: dict[str, Any]) -> str:
    """One line saying what a stored warm start is.

    >>> warm_start_label({"name": "w", "kind": "lora", "base_model": "m", "competitions": ["a"],
    ...                   "demonstrations": 3})
    'w: lora of m on a, 3 demonstrations'
    """
    competitions = ", ".join(manifest.get("competitions", [])) or "?"
    return (
        f"{manifest['name']}: {manifest.get('kind', '?')} of {manifest.get('base_model', '?')} on "
        f"{competitions}, {manifest.get('demonstrations', '?')} demonstrations"
    )


def runs_best_valid_attempts(*, run_ids: list[int], per_competition: int) -> list[Attempt]:
    """The best valid attempts of these runs for self-imitation: per run and competition at most
    `per_competition`, best score first in the metric's direction, with their competition."""
    valid = Attempt.objects.filter(run_id__in=run_ids, valid=True, score__isnull=False)
    pairs = sorted(set(valid.values_list("run_id", "competition_id")))
    metrics = dict(Competition.objects.filter(id__in={c for _, c in pairs}).values_list("id", "metric"))
    chosen: list[Attempt] = []
    for run_id, competition_id in pairs:
        best_first = "-score" if get_metric(metrics[competition_id]).higher_is_better else "score"
        rows = valid.filter(run_id=run_id, competition_id=competition_id).select_related("competition")
        chosen += rows.order_by(best_first, "number")[:per_competition]
    return chosen
