"""Intervals and tests for comparing two benchmark arms (used by bench/rl_vs_static.py).

Each function states what it assumes; the benchmarks say which one stands behind each claim.
This file itself is not a benchmark: run directly, it does nothing.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence

from rl_core.studies import wilson_interval  # noqa: F401  (the benchmarks' and the product's one definition)


def fisher_exact_p(a_successes: int, a_n: int, b_successes: int, b_n: int) -> float:
    """Two-sided p of Fisher's exact test that two proportions are equal (scipy's).

    >>> round(fisher_exact_p(12, 24, 11, 24), 3)
    1.0
    """
    from scipy.stats import fisher_exact

    table = [[a_successes, a_n - a_successes], [b_successes, b_n - b_successes]]
    return float(fisher_exact(table).pvalue)


def t_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """The 95% Student-t interval of the mean of `values` (None for fewer than 2).

    >>> [round(x, 2) for x in t_interval([1.0, 2.0, 3.0])]
    [-0.48, 4.48]
    """
    from scipy.stats import t

    if len(values) < 2:
        return None
    mean, half = statistics.fmean(values), float(t.ppf(0.975, len(values) - 1)) * statistics.stdev(values)
    half /= math.sqrt(len(values))
    return (mean - half, mean + half)


def permutation_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p of the exact permutation test of a difference in means: the share of all relabellings of
    a + b into groups of len(a) and len(b) whose |mean difference| is at least the observed one. With 3
    against 3 values there are 20 relabellings, so the smallest p possible is 2/20 = 0.1.

    >>> permutation_p([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    0.1
    """
    pooled, size = [*a, *b], len(a)
    observed = abs(statistics.fmean(a) - statistics.fmean(b))
    splits = list(itertools.combinations(range(len(pooled)), size))
    extreme = 0
    for chosen in splits:
        first = [pooled[i] for i in chosen]
        second = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        extreme += abs(statistics.fmean(first) - statistics.fmean(second)) >= observed - 1e-12
    return extreme / len(splits)


def rank_permutation_p(a: Sequence[float | None], b: Sequence[float | None]) -> float:
    """`permutation_p` on the ranks of a + b (ties share their mean rank), where None (no value: say, a seed
    with no valid attempt) ranks below every number: the exact rank-sum test, defined whatever is missing.

    >>> rank_permutation_p([None, 0.9, 0.8], [0.1, 0.2, 0.3])
    0.7
    >>> rank_permutation_p([0.7, 0.9, 0.8], [None, None, 0.3])
    0.1
    """
    pooled = ranks([*a, *b])
    return permutation_p(pooled[: len(a)], pooled[len(a) :])


def ranks(values: Sequence[float | None]) -> list[float]:
    """Each value's rank from 1 (ties share their mean rank), None below every number.

    >>> ranks([0.5, None, 0.2, 0.5])
    [3.5, 1.0, 2.0, 3.5]
    """
    pooled = [-math.inf if v is None else v for v in values]
    order = sorted(pooled)
    return [statistics.fmean(i + 1 for i, o in enumerate(order) if o == v) for v in pooled]


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided p of the Mann-Whitney U test that values of `a` and `b` come from one distribution (None
    when either is empty).

    >>> round(mann_whitney_p([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]), 3)
    0.029
    """
    from scipy.stats import mannwhitneyu

    if not a or not b:
        return None
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue)


if __name__ == "__main__":
    print("bench/_stats.py holds the benchmarks' intervals and tests; there is nothing to run.")
