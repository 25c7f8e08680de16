"""The per-competition leaderboard across runs and users: best score, attempts and time to best, valid
rate; percentile and medal tier when the competition has a Kaggle leaderboard."""

from __future__ import annotations

import pytest

from webapp.competitions.models import Competition
from webapp.dashboards.leaderboard import competition_leaderboard

pytestmark = pytest.mark.django_db


def test_each_runs_row_counts_its_attempts_to_best_and_valid_rate(run, finish, competition, owner):
    finish(run, score=None)
    finish(run, score=0.5)
    finish(run, score=0.75)
    finish(run, score=0.6)
    [row] = competition_leaderboard(competition=competition, user=owner)
    assert (row.best_score, row.attempts_to_best, row.attempts, row.valid_rate) == (0.75, 3, 4, 0.75)
    assert row.percentile is None and row.medal is None


def test_with_a_kaggle_leaderboard_a_row_gets_its_percentile_and_medal(run, finish, competition, owner):
    Competition.objects.filter(id=competition.id).update(
        leaderboard_scores=[0.9 - 0.01 * i for i in range(50)]
    )
    competition.refresh_from_db()
    finish(run, score=0.87)
    [row] = competition_leaderboard(competition=competition, user=owner)
    assert row.medal == "gold" and row.percentile == pytest.approx(0.93)


def test_the_leaderboard_shows_only_runs_the_viewer_may_see(run, public_run, finish, competition, stranger):
    finish(run, score=0.9)
    finish(public_run, score=0.1)
    assert [row.run for row in competition_leaderboard(competition=competition, user=stranger)] == [
        public_run
    ]


def test_runs_without_a_valid_attempt_come_last(run, other_run, finish, competition, owner):
    finish(run, score=None)
    finish(other_run, score=0.1)
    rows = competition_leaderboard(competition=competition, user=owner)
    assert (
        [r.run for r in rows] == [other_run, run] and rows[1].best_score is None and rows[1].valid_rate == 0
    )
