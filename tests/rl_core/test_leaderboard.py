"""rl_core.leaderboard: Kaggle medal thresholds for each leaderboard size, tiers, percentiles, loading."""

from __future__ import annotations

import numpy as np
import pytest

from rl_core.leaderboard import (
    MedalThresholds,
    above_median,
    load_leaderboard_scores,
    medal_thresholds,
    medal_tier,
    mlebench_round,
    percentile,
)

# (teams N, 1-based positions of the gold, silver and bronze thresholds), from Kaggle's progression table.
BRACKETS = [
    (5, 1, 1, 2),  # N < 100: 10% / 20% / 40%, at least the top team
    (50, 5, 10, 20),
    (99, 9, 19, 39),
    (100, 10, 20, 40),  # 100 <= N < 250: top 10 / 20% / 40%
    (150, 10, 30, 60),
    (249, 10, 49, 99),
    (250, 10, 50, 100),  # 250 <= N < 1000: top 10 + 0.2% N / 50 / 100
    (500, 11, 50, 100),
    (999, 11, 50, 100),
    (1000, 12, 50, 100),  # N >= 1000: top 10 + 0.2% N / 5% / 10%
    (2000, 14, 100, 200),
    (4321, 18, 216, 432),
]


def board(n_teams: int, seed: int = 0) -> list[float]:
    """The scores 1..N in a shuffled order, so the k-th best is N - k + 1 (higher) or k (lower is better)."""
    return [float(s) for s in np.random.default_rng(seed).permutation(np.arange(1, n_teams + 1))]


@pytest.mark.parametrize("n_teams, gold, silver, bronze", BRACKETS)
def test_medal_thresholds_follow_kaggles_table_when_higher_is_better(n_teams, gold, silver, bronze):
    thresholds = medal_thresholds(board(n_teams), higher_is_better=True)
    best_at = [n_teams - position + 1 for position in (gold, silver, bronze)]
    assert [thresholds.gold, thresholds.silver, thresholds.bronze] == best_at


@pytest.mark.parametrize("n_teams, gold, silver, bronze", BRACKETS)
def test_medal_thresholds_follow_kaggles_table_when_lower_is_better(n_teams, gold, silver, bronze):
    thresholds = medal_thresholds(board(n_teams), higher_is_better=False)
    assert [thresholds.gold, thresholds.silver, thresholds.bronze] == [gold, silver, bronze]


def test_the_median_threshold_is_the_median_score():
    assert medal_thresholds([4.0, 1.0, 3.0, 2.0], higher_is_better=True).median == 2.5


def test_thresholds_do_not_depend_on_the_order_of_the_scores():
    first, second = (medal_thresholds(board(300, seed), higher_is_better=False) for seed in (1, 2))
    assert first == second


def test_thresholds_are_plain_floats():
    thresholds = medal_thresholds(board(20), higher_is_better=True)
    assert all(type(v) is float for v in vars(thresholds).values())


def test_an_empty_leaderboard_has_no_thresholds():
    with pytest.raises(ValueError, match="at least one score"):
        medal_thresholds([], higher_is_better=True)


def test_a_leaderboard_with_a_nan_score_has_no_thresholds():
    with pytest.raises(ValueError, match="finite"):
        medal_thresholds([1.0, float("nan")], higher_is_better=True)


HIGHER = MedalThresholds(gold=0.9, silver=0.8, bronze=0.7, median=0.5)
LOWER = MedalThresholds(gold=0.1, silver=0.2, bronze=0.3, median=0.5)


@pytest.mark.parametrize(
    "score, tier",
    [(0.95, "gold"), (0.9, "gold"), (0.85, "silver"), (0.8, "silver"), (0.7, "bronze"), (0.6, "none")],
)
def test_a_score_wins_the_best_medal_whose_threshold_it_reaches_when_higher_is_better(score, tier):
    assert medal_tier(score, HIGHER, higher_is_better=True) == tier


@pytest.mark.parametrize(
    "score, tier", [(0.05, "gold"), (0.1, "gold"), (0.15, "silver"), (0.3, "bronze"), (0.31, "none")]
)
def test_a_score_wins_the_best_medal_whose_threshold_it_reaches_when_lower_is_better(score, tier):
    assert medal_tier(score, LOWER, higher_is_better=False) == tier


@pytest.mark.parametrize(
    "score, higher_is_better, above", [(0.6, True, True), (0.5, True, False), (0.4, False, True)]
)
def test_above_median_means_strictly_better_than_the_median(score, higher_is_better, above):
    thresholds = HIGHER if higher_is_better else LOWER
    assert above_median(score, thresholds, higher_is_better=higher_is_better) is above


def test_the_kth_best_team_wins_its_medal():
    scores = board(500)
    thresholds = medal_thresholds(scores, higher_is_better=True)
    assert medal_tier(500 - 11 + 1, thresholds, higher_is_better=True) == "gold"
    assert medal_tier(500 - 12 + 1, thresholds, higher_is_better=True) == "silver"


# -- percentile ----------------------------------------------------------------------------------------------


def test_a_score_better_than_every_entry_is_at_percentile_one():
    assert percentile(10.0, [1.0, 2.0, 3.0], higher_is_better=True) == 1.0


def test_a_score_worse_than_every_entry_is_at_percentile_zero():
    assert percentile(0.0, [1.0, 2.0, 3.0], higher_is_better=True) == 0.0


def test_ties_count_half():
    assert percentile(2.0, [1.0, 2.0, 3.0, 4.0], higher_is_better=True) == pytest.approx(1.5 / 4)


def test_a_score_equal_to_every_entry_is_at_the_middle():
    assert percentile(7.0, [7.0, 7.0, 7.0], higher_is_better=False) == 0.5


def test_a_lower_score_beats_higher_ones_when_lower_is_better():
    assert percentile(0.2, [0.1, 0.3, 0.4, 0.5], higher_is_better=False) == 0.75


def test_a_one_entry_leaderboard_gives_zero_half_or_one():
    assert [percentile(s, [1.0], higher_is_better=True) for s in (0.0, 1.0, 2.0)] == [0.0, 0.5, 1.0]


def test_an_empty_leaderboard_has_no_percentile():
    with pytest.raises(ValueError):
        percentile(1.0, [], higher_is_better=True)


def test_a_nan_score_has_no_percentile():
    with pytest.raises(ValueError, match="finite"):
        percentile(float("nan"), [1.0], higher_is_better=True)


# -- loading -------------------------------------------------------------------------------------------------


def test_it_loads_the_score_column_of_a_leaderboard_export(tmp_path):
    path = tmp_path / "leaderboard.csv"
    path.write_text("teamId,teamName,score,submissionDate\n7,a,0.91,2020-01-01\n9,b,0.85,2020-01-02\n")
    assert load_leaderboard_scores(path) == (0.91, 0.85)


def test_it_accepts_kaggles_capitalised_score_column(tmp_path):
    path = tmp_path / "leaderboard.csv"
    path.write_text("TeamId,Score\n1,0.5\n2,0.4\n")
    assert load_leaderboard_scores(path) == (0.5, 0.4)


def test_teams_without_a_score_are_dropped(tmp_path):
    path = tmp_path / "leaderboard.csv"
    path.write_text("teamId,score\n1,0.5\n2,\n3,n/a\n4,0.25\n")
    assert load_leaderboard_scores(path) == (0.5, 0.25)


def test_a_leaderboard_without_a_score_column_is_refused_by_name(tmp_path):
    path = tmp_path / "leaderboard.csv"
    path.write_text("teamId,points\n1,0.5\n")
    with pytest.raises(ValueError, match=r"leaderboard\.csv has no 'score' column"):
        load_leaderboard_scores(path)


def test_a_leaderboard_without_numeric_scores_is_refused(tmp_path):
    path = tmp_path / "leaderboard.csv"
    path.write_text("teamId,score\n1,\n")
    with pytest.raises(ValueError, match="no numeric score"):
        load_leaderboard_scores(path)


def test_an_empty_leaderboard_file_is_refused(tmp_path):
    path = tmp_path / "leaderboard.csv"
    path.write_text("")
    with pytest.raises(ValueError, match="not a readable CSV"):
        load_leaderboard_scores(path)


def test_a_score_is_rounded_to_five_decimals_before_it_meets_a_threshold_as_mlebench_rounds_it():
    thresholds = MedalThresholds(gold=0.9, silver=0.8, bronze=0.7, median=0.6)
    assert medal_tier(0.899996, thresholds, higher_is_better=True) == "gold"  # MLE-bench reports 0.9
    assert medal_tier(0.899994, thresholds, higher_is_better=True) == "silver"  # ... and 0.89999 here
    losses = MedalThresholds(gold=0.5, silver=0.6, bronze=0.7, median=0.8)
    assert medal_tier(0.700004, losses, higher_is_better=False) == "bronze"
    assert not above_median(0.600004, thresholds, higher_is_better=True)


def test_a_percentile_ties_a_score_that_rounds_to_a_leaderboard_score():
    assert percentile(0.8000004, [0.9, 0.8, 0.7], higher_is_better=True) == pytest.approx(0.5)


def test_mlebench_round_is_pythons_round_to_five_places():
    assert mlebench_round(0.123455) == round(0.123455, 5) and mlebench_round(2) == 2.0
