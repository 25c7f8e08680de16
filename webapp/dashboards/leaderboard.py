"""A competition's leaderboard across runs and users: each visible run's best valid score there, how many
attempts and seconds it took to reach it, its valid rate, and, where the competition has a Kaggle
leaderboard, the percentile and medal tier that score would earn (rl_core.leaderboard)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from typing import Any

from django.contrib.auth.models import AnonymousUser, User

from rl_core.leaderboard import MedalThresholds, medal_thresholds, medal_tier, percentile
from rl_core.metrics import get_metric
from webapp.competitions.models import Competition
from webapp.runs import selectors
from webapp.runs.models import Run


@dataclass(frozen=True)
class LeaderboardRow:
    run: Run
    best_score: float | None
    attempts: int
    """Finished attempts of this run on this competition."""
    attempts_to_best: int | None
    """The number (1-based, within the run) of the attempt that first reached the best score."""
    time_to_best_s: float | None
    """Seconds from the run's start to that attempt's finish."""
    valid_rate: float | None
    percentile: float | None
    """Fraction (0..1) of the Kaggle leaderboard the best score beats."""
    medal: str | None


def competition_leaderboard(
    *, competition: Competition, user: User | AnonymousUser, limit: int = 100
) -> list[LeaderboardRow]:
    """The runs on `competition` that `user` may see, best first; runs with no valid attempt last."""
    runs = {r.id: r for r in selectors.runs_on_competition(competition=competition, user=user)[:limit]}
    higher = get_metric(competition.metric).higher_is_better
    thresholds = competition_thresholds(competition, higher)
    rows_by_run = groupby(
        selectors.competition_attempt_rows(competition=competition, run_ids=list(runs)),
        key=lambda a: a.run_id,
    )
    seen = {run_id: list(attempts) for run_id, attempts in rows_by_run}
    board = [
        leaderboard_row(run, seen.get(run.id, []), higher, competition.leaderboard_scores, thresholds)
        for run in runs.values()
    ]
    return sorted(board, key=lambda row: sort_key(row, higher))


def competition_thresholds(competition: Competition, higher: bool) -> MedalThresholds | None:
    scores = competition.leaderboard_scores
    return medal_thresholds(scores, higher_is_better=higher) if scores else None


def leaderboard_row(
    run: Run, attempts: list, higher: bool, scores: list[float] | None, thresholds: MedalThresholds | None
) -> LeaderboardRow:
    """One run's row from its finished attempts on the competition (in dispatch order)."""
    best = best_attempt(attempts, higher)
    counted = [a for a in attempts if a.status != "lost"]
    score = best.score if best else None
    return LeaderboardRow(
        run=run,
        best_score=score,
        attempts=len(counted),
        attempts_to_best=best.number if best else None,
        time_to_best_s=seconds_between(run.started_at, best.finished_at) if best else None,
        valid_rate=sum(a.valid for a in counted) / len(counted) if counted else None,
        percentile=percentile(score, scores, higher_is_better=higher)
        if score is not None and scores
        else None,
        medal=medal_tier(score, thresholds, higher_is_better=higher)
        if score is not None and thresholds
        else None,
    )


def best_attempt(attempts: list, higher: bool) -> Any:
    """The first attempt with the best valid score, or None."""
    graded = [a for a in attempts if a.valid and a.score is not None]
    if not graded:
        return None
    best = max(a.score for a in graded) if higher else min(a.score for a in graded)
    return next(a for a in graded if a.score == best)


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    return (end - start).total_seconds() if start and end else None


def sort_key(row: LeaderboardRow, higher: bool) -> tuple:
    if row.best_score is None:
        return (1, 0.0, row.run.id)
    return (0, -row.best_score if higher else row.best_score, row.attempts_to_best or 0)
