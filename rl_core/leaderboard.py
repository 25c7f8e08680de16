"""Kaggle leaderboards the MLE-bench way: percentiles, medal thresholds and medal tiers.

A leaderboard is the list of final team scores from a Kaggle leaderboard export (``leaderboard.csv``,
one row per team, with a ``score`` column among others). Medal thresholds follow Kaggle's progression
rules for competitions as MLE-bench applies them (``mlebench/grade_helpers.py``), with N teams:

==================  ==================  ==================  ==================
teams N             gold                silver              bronze
==================  ==================  ==================  ==================
N < 100             top 10%             top 20%             top 40%
100 <= N < 250      top 10              top 20%             top 40%
250 <= N < 1000     top 10 + 0.2% N     top 50              top 100
N >= 1000           top 10 + 0.2% N     top 5%              top 10%
==================  ==================  ==================  ==================

"Top k" means the score of the k-th best team (k = max(1, floor(fraction * N)) for a percentage); a score
at least as good as that wins the medal. The median threshold is the median leaderboard score, and
"above median" is strictly better than it. A score is rounded to 5 decimals before it is compared with
the leaderboard, as MLE-bench's ``Grader`` rounds every score it returns (`mlebench_round`); the
leaderboard's own scores are compared as they are. Unlike MLE-bench, which takes the file's row order as
the ranking and guesses the direction from it, the scores are ranked here by the metric's known direction.

>>> board = [0.9 - 0.01 * i for i in range(50)]
>>> thresholds = medal_thresholds(board, higher_is_better=True)
>>> round(thresholds.gold, 2), round(thresholds.bronze, 2)
(0.86, 0.71)
>>> medal_tier(0.87, thresholds, higher_is_better=True)
'gold'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

MedalTier = Literal["gold", "silver", "bronze", "none"]

SCORE_DECIMALS = 5
"""MLE-bench's ``Grader.__call__`` returns ``round(score, 5)``; ranking uses that rounded score."""


def mlebench_round(score: float) -> float:
    """A score as MLE-bench's grader reports it, rounded to `SCORE_DECIMALS` decimals (Python's round).

    >>> mlebench_round(0.8765449), mlebench_round(0.123456789)
    (0.87654, 0.12346)
    """
    return round(float(score), SCORE_DECIMALS)


@dataclass(frozen=True)
class MedalThresholds:
    """The worst score that still wins each medal, and the leaderboard's median score (metric units)."""

    gold: float
    silver: float
    bronze: float
    median: float


def load_leaderboard_scores(path: Path) -> tuple[float, ...]:
    """The scores of a Kaggle leaderboard export, in file order.

    The score column is ``score`` (MLE-bench's exports), or else ``Score`` in any capitalisation (Kaggle's
    own downloads). Rows whose score is empty or not a number (teams without a final score) are dropped.

    Raises:
        ValueError: naming the file, when it is not a readable CSV, has no ``score`` column, or holds
            no numeric score at all. (A missing file raises FileNotFoundError.)
    """
    try:
        board = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise ValueError(f"The leaderboard {path} is not a readable CSV file ({error}).") from None
    column = _score_column(board)
    if column is None:
        raise ValueError(
            f"The leaderboard {path} has no 'score' column (its columns: {list(board.columns)})."
        )
    scores = pd.to_numeric(board[column], errors="coerce").astype(float)
    scores = scores[np.isfinite(scores)]
    if scores.empty:
        raise ValueError(f"The leaderboard {path} holds no numeric score.")
    return tuple(float(s) for s in scores)


def _score_column(board: pd.DataFrame) -> str | None:
    """The name of the leaderboard's score column: "score", else any capitalisation of it, else None."""
    if "score" in board.columns:
        return "score"
    return next((str(c) for c in board.columns if str(c).strip().lower() == "score"), None)


def _checked(scores: Sequence[float]) -> np.ndarray:
    """(N,) float array of the scores; ValueError when there are none or some are not finite."""
    board = np.asarray(scores, dtype=float)
    if board.size == 0:
        raise ValueError("A leaderboard needs at least one score.")
    if not np.isfinite(board).all():
        raise ValueError("Leaderboard scores must be finite numbers.")
    return board


def percentile(score: float, scores: Sequence[float], *, higher_is_better: bool) -> float:
    """The fraction (0..1) of leaderboard entries that `score` (rounded to 5 decimals) beats, each tie
    counting as half a win.

    1.0 beats every entry, 0.0 beats none, and a score equal to every entry gets 0.5.

    >>> percentile(0.8, [0.9, 0.8, 0.7, 0.6], higher_is_better=True)
    0.625
    >>> percentile(0.1, [0.3, 0.2], higher_is_better=False)
    1.0
    """
    board = _checked(scores)
    if not math.isfinite(score):
        raise ValueError(f"A score must be a finite number, got {score}.")
    score = mlebench_round(score)
    beaten = board < score if higher_is_better else board > score
    return float((beaten.sum() + 0.5 * (board == score).sum()) / board.size)


def _medal_positions(n_teams: int) -> tuple[int, int, int]:
    """The 1-based leaderboard positions (gold, silver, bronze) whose scores are the medal thresholds."""

    def top(fraction: float) -> int:
        return max(1, int(n_teams * fraction))

    if n_teams < 100:
        return top(0.1), top(0.2), top(0.4)
    if n_teams < 250:
        return 10, top(0.2), top(0.4)
    gold = 10 + int(n_teams * 0.002)
    if n_teams < 1000:
        return gold, 50, 100
    return gold, top(0.05), top(0.1)


def medal_thresholds(scores: Sequence[float], *, higher_is_better: bool) -> MedalThresholds:
    """Kaggle's medal thresholds for a leaderboard (the table in the module docstring).

    Args:
        scores: (N,) final scores of the N teams, in any order.
        higher_is_better: the metric's direction, which ranks the scores.
    Raises:
        ValueError: when there are no scores or some are not finite.
    """
    board = _checked(scores)
    ranked = np.sort(board)[::-1] if higher_is_better else np.sort(board)
    gold, silver, bronze = (float(ranked[p - 1]) for p in _medal_positions(board.size))
    return MedalThresholds(gold=gold, silver=silver, bronze=bronze, median=float(np.median(board)))


def _at_least_as_good(score: float, threshold: float, higher_is_better: bool) -> bool:
    return score >= threshold if higher_is_better else score <= threshold


def medal_tier(score: float, thresholds: MedalThresholds, *, higher_is_better: bool) -> MedalTier:
    """The best medal `score` (rounded to 5 decimals) wins: at least as good as its threshold; else "none".

    >>> medal_tier(0.5, MedalThresholds(0.2, 0.4, 0.6, 0.9), higher_is_better=False)
    'bronze'
    >>> medal_tier(0.899996, MedalThresholds(0.9, 0.8, 0.7, 0.5), higher_is_better=True)
    'gold'
    """
    score = mlebench_round(score)
    tiers: tuple[tuple[MedalTier, float], ...] = (
        ("gold", thresholds.gold),
        ("silver", thresholds.silver),
        ("bronze", thresholds.bronze),
    )
    for tier, threshold in tiers:
        if _at_least_as_good(score, threshold, higher_is_better):
            return tier
    return "none"


def above_median(score: float, thresholds: MedalThresholds, *, higher_is_better: bool) -> bool:
    """Whether `score` (rounded to 5 decimals) is strictly better than the leaderboard's median score
    (MLE-bench's "above median").

    >>> above_median(0.7, MedalThresholds(0.9, 0.8, 0.75, 0.7), higher_is_better=True)
    False
    """
    score = mlebench_round(score)
    return score > thresholds.median if higher_is_better else score < thresholds.median
