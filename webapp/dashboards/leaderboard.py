"""A competition's leaderboard across runs and users, saying how each result was obtained (issue 28).

Each visible run's row holds its reward source and its result on the competition: a `validation` run's one
final grade on the hidden answers (never a validation score: those trained it), a `hidden` run's best score
on the hidden answers (test feedback: the search saw those scores). Percentile and medal tier, where the
competition has a Kaggle leaderboard (rl_core.leaderboard), come from that result only. Beside it, how it
was reached (attempts and seconds to the result's program, valid rate) and what it cost: wall-clock,
executor-seconds, hardware, and for LM runs tokens sampled and policy updates.

Cost is a fixed handful of queries however many runs and attempts: results are found by a subquery per run
and the counts and sums in one grouped query (webapp.runs.standings), never a query per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.utils import timezone

from rl_core.leaderboard import MedalThresholds, medal_thresholds, medal_tier, percentile
from rl_core.metrics import get_metric
from webapp.competitions.models import Competition
from webapp.runs import selectors, standings
from webapp.runs.models import Attempt, Run

SOURCES = ("validation", "hidden")
"""The reward sources a leaderboard filters by (`?source=`); anything else shows every run."""


@dataclass(frozen=True)
class LeaderboardRow:
    run: Run
    reward_source: str
    """"validation" (a clean result) or "hidden" (the search saw test feedback)."""
    result: float | None
    """The run's result here: a validation run's final grade, a hidden run's best score; None without one."""
    result_note: str
    """Why there is no result, when there is none ("" otherwise)."""
    attempts: int
    """Finished training attempts of this run on this competition (final gradings left out)."""
    attempts_to_best: int | None
    """The number (1-based, within the run) of the attempt whose program gave the result."""
    time_to_best_s: float | None
    """Seconds from the run's start to that attempt's finish."""
    valid_rate: float | None
    percentile: float | None
    """Fraction (0..1) of the Kaggle leaderboard the result beats."""
    medal: str | None
    wall_clock_s: float | None
    """Seconds from the run's start to its end (to now while it runs)."""
    executor_s: float | None
    """Seconds its attempts' programs ran, summed over all its attempts."""
    hardware: str
    tokens: int | None
    """Tokens an LM run sampled (None for the grammar policy)."""
    policy_updates: int


def competition_leaderboard(
    *, competition: Competition, user: User | AnonymousUser, source: str | None = None, limit: int = 100
) -> list[LeaderboardRow]:
    """The runs on `competition` that `user` may see (only those of reward source `source` when it is one of
    SOURCES), best result first; runs without a result last."""
    visible = selectors.runs_on_competition(competition=competition, user=user)
    if source in SOURCES:
        visible = standings.runs_with_reward_source(visible, source=source)
    runs = list(standings.runs_annotate_result(visible, competition=competition)[:limit])
    results = standings.result_attempt_rows(attempt_ids=[r.result_id for r in runs if r.result_id])
    finals = [a for a in results.values() if a.prompt_kind == selectors.FINAL_KIND]
    trained = {run_id: a for run_id, a in results.items() if a.prompt_kind != selectors.FINAL_KIND}
    chosen = trained | standings.chosen_attempt_rows(finals=finals)
    tallies = standings.competition_run_tallies(competition=competition, run_ids=[r.id for r in runs])
    higher = get_metric(competition.metric).higher_is_better
    board = Board(higher, competition.leaderboard_scores, competition_thresholds(competition, higher))
    rows = [
        leaderboard_row(run, results.get(run.id), chosen.get(run.id), tallies.get(run.id, {}), board)
        for run in runs
    ]
    return sorted(rows, key=lambda row: sort_key(row, higher))


@dataclass(frozen=True)
class Board:
    """What ranks a result on one competition: the metric's direction and its Kaggle leaderboard."""

    higher: bool
    scores: list[float] | None
    thresholds: MedalThresholds | None

    def percentile(self, score: float | None) -> float | None:
        if score is None or not self.scores:
            return None
        return percentile(score, self.scores, higher_is_better=self.higher)

    def medal(self, score: float | None) -> str | None:
        if score is None or self.thresholds is None:
            return None
        return medal_tier(score, self.thresholds, higher_is_better=self.higher)


def competition_thresholds(competition: Competition, higher: bool) -> MedalThresholds | None:
    scores = competition.leaderboard_scores
    return medal_thresholds(scores, higher_is_better=higher) if scores else None


def leaderboard_row(
    run: Run, result: Attempt | None, chosen: Attempt | None, tally: dict[str, Any], board: Board
) -> LeaderboardRow:
    """One run's row from its result attempt, the attempt whose program that is (the result itself for a
    hidden run, the graded program's attempt for a validation run) and its tallies."""
    source = run_reward_source(run)
    score = result.score if result is not None and result.valid else None
    attempts, valid = tally.get("attempts", 0), tally.get("valid", 0)
    return LeaderboardRow(
        run=run,
        reward_source=source,
        result=score,
        result_note=result_note(run, source, result),
        attempts=attempts,
        attempts_to_best=chosen.number if chosen else None,
        time_to_best_s=seconds_between(run.started_at, chosen.finished_at) if chosen else None,
        valid_rate=valid / attempts if attempts else None,
        percentile=board.percentile(score),
        medal=board.medal(score),
        wall_clock_s=wall_clock_s(run),
        executor_s=tally.get("executor_s"),
        hardware=run.hardware,
        tokens=tally.get("tokens"),
        policy_updates=run.policy_version,
    )


def run_reward_source(run: Run) -> str:
    """The run's reward source; runs from before the setting existed trained on the hidden answers."""
    return (run.config or {}).get("reward_source", "hidden")


def result_note(run: Run, source: str, result: Attempt | None) -> str:
    """Why a row has no result, in a few words ("" when it has one)."""
    if result is not None and result.valid and result.score is not None:
        return ""
    if source == "hidden":
        return "no valid attempt"
    if result is not None:
        return "final grading invalid"
    return "graded once when the run ends" if run.is_active else "nothing valid on validation to grade"


def wall_clock_s(run: Run) -> float | None:
    end = run.finished_at or (timezone.now() if run.is_active else None)
    return seconds_between(run.started_at, end)


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    return (end - start).total_seconds() if start and end else None


def sort_key(row: LeaderboardRow, higher: bool) -> tuple:
    if row.result is None:
        return (1, 0.0, row.run.id)
    return (0, -row.result if higher else row.result, row.attempts_to_best or 0)
