"""rl_core.studies: the stratified test, its interval and the curves, against examples worked by hand and
against scipy's chi-square (an implementation of its own)."""

from __future__ import annotations

import doctest
import math

import pytest
from scipy.stats import chi2

from rl_core import studies
from rl_core.studies import SeedArm, band, cmh, compare_arms, mh_risk_difference, on_time_grid, windows

# Two seeds, four counted attempts per arm each (worked by hand):
#   seed 0: arm 3/4 valid, reference 1/4;  seed 1: arm 2/4, reference 2/4.
# CMH: per stratum N = 8, valid = 4, E[a] = 4*4/8 = 2, Var = 4*4*4*4 / (8^2 * 7) = 4/7;
#   sum (a - E) = (3 - 2) + (2 - 2) = 1, so X^2 = 1 / (8/7) = 7/8.
# MH risk difference: weights 4*4/8 = 2 each; numerators (3*4 - 1*4)/8 = 1 and (2*4 - 2*4)/8 = 0: RD = 1/4.
# Greenland-Robins variance: stratum terms (3*1*64 + 1*3*64)/(16*64) = 3/8 and (2*2*64 + 2*2*64)/(16*64)
#   = 1/2,
#   sum 7/8 over (2 + 2)^2 = 16: 7/128, so the 95% half-width is 1.95996 * sqrt(7/128) = 0.45834.
# Per-seed differences 0.5 and 0.0: mean 0.25, sd sqrt(1/8), se 0.25, t(1) = 12.7062: [-2.9266, 3.4266],
#   p 0.5.
STRATA = [(3, 4, 1, 4), (2, 4, 2, 4)]


def test_the_docstring_examples_hold():
    assert doctest.testmod(studies).failed == 0


def test_cmh_matches_the_hand_computed_example_and_scipy_chi_square():
    statistic, p = cmh(STRATA)
    assert statistic == pytest.approx(7 / 8)
    assert p == pytest.approx(float(chi2.sf(7 / 8, 1)))
    assert p == pytest.approx(0.349575, abs=1e-6)


def test_risk_difference_and_interval_match_the_hand_computed_example():
    difference, (low, high) = mh_risk_difference(STRATA)
    assert difference == pytest.approx(0.25)
    half = 1.959963984540054 * math.sqrt(7 / 128)
    assert (low, high) == pytest.approx((0.25 - half, 0.25 + half))
    assert half == pytest.approx(0.45834, abs=1e-5)


def test_one_large_stratum_gives_the_unstratified_wald_interval():
    difference, (low, _) = mh_risk_difference([(30, 100, 20, 100)])
    wald = 1.959963984540054 * math.sqrt(0.3 * 0.7 / 100 + 0.2 * 0.8 / 100)
    assert difference == pytest.approx(0.1)
    assert low == pytest.approx(0.1 - wald)


def test_no_information_gives_no_p_rather_than_a_made_up_one():
    assert cmh([(4, 4, 4, 4)]) == (None, None)
    assert mh_risk_difference([(0, 0, 1, 3)]) == (None, None)


def runs_of_the_example() -> list[SeedArm]:
    """The example above as runs: two attempts before the rl arm's first update, then four counted ones."""
    before = [True, False]
    return [
        SeedArm("static", 0, [*before, True, False, False, False]),
        SeedArm("rl", 0, [*before, True, True, True, False], versions=[0, 0, 1, 1, 1, 1]),
        SeedArm("static", 1, [*before, True, True, False, False]),
        SeedArm("rl", 1, [*before, True, False, True, False], versions=[0, 0, 1, 1, 2, 2]),
    ]


def test_compare_arms_counts_from_the_seeds_first_update_at_the_same_positions_in_both_arms():
    (test,) = compare_arms(runs_of_the_example(), ["static", "rl"], after_first_update=True)
    assert test.seeds == [0, 1]
    assert test.counts["rl"].valid == 5 and test.counts["rl"].attempts == 8
    assert test.counts["static"].valid == 3 and test.counts["static"].attempts == 8
    assert test.statistic == pytest.approx(7 / 8)
    assert test.difference == pytest.approx(0.25)
    assert test.seed_differences == [0.5, 0.0]
    assert test.seed_difference_ci == pytest.approx((-2.9266, 3.4266), abs=1e-4)
    assert test.seed_difference_p == pytest.approx(0.5)


def test_a_seed_whose_runs_have_not_updated_yet_is_not_counted():
    runs = [SeedArm("static", 0, [True, False]), SeedArm("rl", 0, [True, True], versions=[0, 0])]
    (test,) = compare_arms(runs, ["static", "rl"], after_first_update=True)
    assert test.seeds == [] and test.p_value is None and test.difference is None


def test_a_live_study_counts_only_the_positions_both_runs_have_reached():
    runs = [SeedArm("static", 0, [True] * 10), SeedArm("rl", 0, [False] * 4)]
    (test,) = compare_arms(runs, ["static", "rl"], after_first_update=False)
    assert test.counts["static"].attempts == test.counts["rl"].attempts == 4


def test_band_is_the_t_interval_across_seeds_and_keeps_single_values():
    (mean, low, high), single = band([[1.0, 5.0], [2.0], [3.0]])
    assert mean == pytest.approx(2.0)
    half = 4.302653 * 1.0 / math.sqrt(3)  # t(2) * sd / sqrt(3)
    assert (low, high) == pytest.approx((mean - half, mean + half), abs=1e-5)
    assert single == (5.0, 5.0, 5.0)


def test_time_grid_holds_the_latest_value_and_stops_where_the_run_ended():
    assert on_time_grid([1.0, 3.0], [0.2, 0.8], [0.0, 1.0, 2.0, 3.0, 4.0]) == [None, 0.2, 0.2, 0.8, None]


def test_windows_pool_the_seeds_per_tenth_of_the_budget():
    runs = [
        SeedArm("rl", 0, [True, False, True, True], rewards=[1, 0, 1, 1]),
        SeedArm("rl", 1, [False] * 4, rewards=[0] * 4),
    ]
    first, second = windows(runs, count=2)
    assert (first["valid"], first["attempts"], second["valid"], second["attempts"]) == (1, 4, 2, 4)
    assert second["mean_reward"] == pytest.approx(0.5)
    assert first["valid_rate_ci"] == pytest.approx(studies.wilson_interval(1, 4))


def test_smoothing_outside_zero_to_one_is_refused_by_name():
    with pytest.raises(ValueError, match="smoothing"):
        studies.smooth([1.0], 1.0)
