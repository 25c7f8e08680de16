"""bench/_stats.py against independent computations: statsmodels' Wilson interval, a t interval and
Fisher's test worked by hand, and a permutation test counted by brute force."""

from __future__ import annotations

import math
import sys
from itertools import permutations
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import _stats


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 24), (12, 24), (70, 72), (1, 1)])
def test_the_wilson_interval_is_statsmodels(k, n):
    from statsmodels.stats.proportion import proportion_confint

    expected = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert _stats.wilson_interval(k, n) == pytest.approx(expected, abs=1e-9)


def test_fishers_exact_p_is_the_hypergeometric_tail_worked_by_hand():
    # 3/4 against 0/4: tables as or more extreme, margins 3 successes of 8, 4 per row: a = 3 or a = 0.
    one_table = math.comb(4, 3) * math.comb(4, 0) / math.comb(8, 3)
    assert _stats.fisher_exact_p(3, 4, 0, 4) == pytest.approx(2 * one_table)
    assert _stats.fisher_exact_p(12, 24, 12, 24) == pytest.approx(1.0)


def test_the_t_interval_uses_the_t_quantile_for_n_minus_one_degrees():
    low, high = _stats.t_interval([2.0, 4.0, 6.0])  # mean 4, sd 2, t(0.975, 2) = 4.302653
    assert (low, high) == pytest.approx((4 - 4.302653 * 2 / math.sqrt(3), 4 + 4.302653 * 2 / math.sqrt(3)))
    assert _stats.t_interval([1.0]) is None


def test_the_permutation_p_counts_every_relabelling():
    a, b = [0.9, 0.4, 0.7], [0.5, 0.3, 0.6]
    observed = abs(sum(a) / 3 - sum(b) / 3)
    pooled = a + b
    orders = list(permutations(pooled))  # 720 orders, each split counted 36 times
    extreme = sum(abs(sum(o[:3]) / 3 - sum(o[3:]) / 3) >= observed - 1e-12 for o in orders)
    assert _stats.permutation_p(a, b) == pytest.approx(extreme / len(orders))
    assert _stats.permutation_p([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == pytest.approx(0.1)


def test_mann_whitney_needs_values_on_both_sides():
    assert _stats.mann_whitney_p([], [1.0]) is None
    assert 0 < _stats.mann_whitney_p([1.0, 2.0], [1.5, 2.5]) <= 1


def test_the_rank_permutation_p_ranks_a_missing_value_below_every_number():
    # No missing values: the same as the permutation test on the ranks worked out by hand.
    assert _stats.rank_permutation_p([0.9, 0.4, 0.7], [0.5, 0.3, 0.6]) == pytest.approx(
        _stats.permutation_p([6.0, 2.0, 5.0], [3.0, 1.0, 4.0])
    )
    # A seed without a value ranks lowest; two missing values share ranks 1 and 2 (1.5 each).
    assert _stats.rank_permutation_p([None, 0.9], [None, 0.1]) == pytest.approx(
        _stats.permutation_p([1.5, 4.0], [1.5, 3.0])
    )
    assert _stats.rank_permutation_p([0.7, 0.9, 0.8], [None, None, 0.3]) == pytest.approx(0.1)
