"""The statistics of a study: several arms (run settings) each run on the same seeds, compared.

One run is a `SeedArm`: an arm on one seed, its training attempts in the order they finished. Both
`bench/rl_vs_static.py` and the study page (webapp/dashboards) read a study through this module, so the
benchmark's pre-registered analysis and what a user sees are one computation:

- **The primary test** (`compare_arms`): each arm's valid rate against the reference arm's (the first), with
  the seeds as strata: the Cochran-Mantel-Haenszel test (no continuity correction) and the Mantel-Haenszel
  common risk difference with its 95% interval (the Greenland-Robins variance, as RevMan computes it). Only
  attempts at positions after the seed's first update count (`after_first_update`), in every arm at the same
  positions, so a static arm is compared at the positions where the RL arm's samples come from an updated
  policy. Why stratified: each seed pairs the arms from one starting policy and one stream of prompts, so
  seed-to-seed differences (a lucky start) are held fixed. What it assumes: attempts within a run are
  independent given the seed and arm; a run's policy drifts, so the per-seed paired difference
  (`seed_differences`, a t interval over seeds) is reported beside it as the check that does not assume it.
- **Curves with bands** (`band`, `on_time_grid`, `smooth`): each arm's mean over seeds at each attempt (or
  moment), with a 95% t interval across seeds, after an exponential moving average per run.
- **Windows** (`windows`): the valid rate (Wilson interval, pooled over seeds) and mean reward per tenth of
  the run.

Pure Python; scipy for the t and normal quantiles.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Z_95 = 1.959963984540054
"""The standard normal's 97.5th percentile: a two-sided 95% interval."""


@dataclass(frozen=True)
class SeedArm:
    """One run of a study: `arm` on `seed`, its training attempts in the order they finished."""

    arm: str
    seed: int
    valid: Sequence[bool]
    versions: Sequence[int] = ()
    """The policy version that drew each attempt (0: before any update); empty means all 0."""
    rewards: Sequence[float] = ()
    finished_s: Sequence[float] = ()
    """Seconds since the run started at which each attempt finished."""

    def first_update_position(self) -> int | None:
        """The position (0-based) of the first attempt drawn by an updated policy; None if there is none."""
        return next((i for i, version in enumerate(self.versions) if version > 0), None)


@dataclass(frozen=True)
class Counts:
    """Valid attempts out of all counted, in one arm (on one seed, or pooled)."""

    valid: int
    attempts: int

    @property
    def rate(self) -> float | None:
        return self.valid / self.attempts if self.attempts else None

    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.valid, self.attempts) if self.attempts else None


@dataclass(frozen=True)
class ArmTest:
    """An arm against the reference arm: the stratified test of their valid rates and the per-seed check."""

    arm: str
    reference: str
    name: str
    statistic: float | None
    p_value: float | None
    difference: float | None
    """The Mantel-Haenszel risk difference: arm's valid rate minus the reference's, seeds as strata."""
    difference_ci: tuple[float, float] | None
    seeds: list[int]
    """The seeds both arms have, in the order tested (the strata)."""
    counts: dict[str, Counts]
    """Each of the two arms' valid attempts over the counted positions, pooled over `seeds`."""
    seed_differences: list[float] = field(default_factory=list)
    seed_difference_ci: tuple[float, float] | None = None
    seed_difference_p: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "arm": self.arm, "reference": self.reference, "name": self.name, "statistic": self.statistic,
            "p_value": self.p_value, "difference": self.difference,
            "difference_ci": list(self.difference_ci) if self.difference_ci else None, "seeds": self.seeds,
            "counts": {arm: {"valid": c.valid, "attempts": c.attempts, "rate": c.rate} for arm, c in
                       self.counts.items()},
            "seed_differences": self.seed_differences,
            "seed_difference_ci": list(self.seed_difference_ci) if self.seed_difference_ci else None,
            "seed_difference_p": self.seed_difference_p,
        }  # fmt: skip


Stratum = tuple[int, int, int, int]
"""(valid in the arm, attempts in the arm, valid in the reference, attempts in the reference) on one seed."""


def wilson_interval(successes: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion (independent trials assumed).

    >>> [round(x, 3) for x in wilson_interval(5, 10)]
    [0.237, 0.763]
    """
    if n == 0:
        return (0.0, 1.0)
    p, z2 = successes / n, Z_95**2
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z_95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return (centre - half, centre + half)


def t_quantile(df: int) -> float:
    """Student's t 97.5th percentile with `df` degrees of freedom (a two-sided 95% interval)."""
    from scipy.stats import t

    return float(t.ppf(0.975, df))


def mean_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high): the 95% t interval of the mean; a single value is its own interval."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return (mean, mean, mean)
    half = t_quantile(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return (mean, mean - half, mean + half)


def cmh(strata: Sequence[Stratum]) -> tuple[float | None, float | None]:
    """The Cochran-Mantel-Haenszel chi-square (1 df, no continuity correction) and its p: None, None when
    no stratum carries information (every stratum all valid, all invalid, or a single attempt)."""
    deviation = variance = 0.0
    for a, n1, c, n0 in strata:
        total, valid = n1 + n0, a + c
        if total < 2:
            continue
        deviation += a - n1 * valid / total
        variance += n1 * n0 * valid * (total - valid) / (total * total * (total - 1))
    if variance <= 0:
        return None, None
    statistic = deviation * deviation / variance
    return statistic, math.erfc(math.sqrt(statistic / 2))


def mh_risk_difference(strata: Sequence[Stratum]) -> tuple[float | None, tuple[float, float] | None]:
    """The Mantel-Haenszel common risk difference (arm minus reference) and its 95% interval from the
    Greenland-Robins variance; (None, None) without a stratum holding both arms."""
    weight = numerator = variance = 0.0
    for a, n1, c, n0 in strata:
        if n1 == 0 or n0 == 0:
            continue
        total = n1 + n0
        weight += n1 * n0 / total
        numerator += (a * n0 - c * n1) / total
        b, d = n1 - a, n0 - c
        variance += (a * b * n0**3 + c * d * n1**3) / (n1 * n0 * total * total)
    if weight == 0:
        return None, None
    difference = numerator / weight
    half = Z_95 * math.sqrt(variance) / weight
    return difference, (difference - half, difference + half)


def counted_positions(runs: Sequence[SeedArm], *, after_first_update: bool) -> int | None:
    """From which position a seed's runs are counted: 0, or with `after_first_update` the first position
    any of them drew from an updated policy (None: none has yet, so the seed is not counted)."""
    if not after_first_update:
        return 0
    firsts = [p for p in (run.first_update_position() for run in runs) if p is not None]
    return min(firsts) if firsts else None


def seed_counts(runs: Sequence[SeedArm], *, after_first_update: bool) -> dict[str, Counts] | None:
    """Each arm's counts on one seed over the same positions: from `counted_positions` to the shortest
    run's end (a live study's runs have not all finished as many attempts). None: nothing is counted yet."""
    start = counted_positions(runs, after_first_update=after_first_update)
    if start is None:
        return None
    end = min(len(run.valid) for run in runs)
    return {run.arm: Counts(sum(run.valid[start:end]), max(end - start, 0)) for run in runs}


def by_seed(runs: Sequence[SeedArm]) -> dict[int, dict[str, SeedArm]]:
    table: dict[int, dict[str, SeedArm]] = {}
    for run in runs:
        table.setdefault(run.seed, {})[run.arm] = run
    return dict(sorted(table.items()))


def compare_arms(runs: Sequence[SeedArm], arms: Sequence[str], *, after_first_update: bool) -> list[ArmTest]:
    """Every arm after the first against the first (the reference), on the seeds both have run."""
    reference, tests = arms[0], []
    for arm in arms[1:]:
        strata: list[Stratum] = []
        seeds: list[int] = []
        for seed, seed_runs in by_seed(runs).items():
            if arm not in seed_runs or reference not in seed_runs:
                continue
            counts = seed_counts(
                [seed_runs[arm], seed_runs[reference]], after_first_update=after_first_update
            )
            if counts is None or counts[arm].attempts == 0:
                continue
            strata.append((counts[arm].valid, counts[arm].attempts, counts[reference].valid,
                           counts[reference].attempts))  # fmt: skip
            seeds.append(seed)
        tests.append(arm_test(arm, reference, seeds, strata))
    return tests


def arm_test(arm: str, reference: str, seeds: list[int], strata: Sequence[Stratum]) -> ArmTest:
    statistic, p = cmh(strata)
    difference, interval = mh_risk_difference(strata)
    per_seed = [a / n1 - c / n0 for a, n1, c, n0 in strata]
    seed_ci, seed_p = seed_differences(per_seed)
    pooled = {
        arm: Counts(sum(s[0] for s in strata), sum(s[1] for s in strata)),
        reference: Counts(sum(s[2] for s in strata), sum(s[3] for s in strata)),
    }
    return ArmTest(
        arm=arm, reference=reference, name="Cochran-Mantel-Haenszel, seeds as strata", statistic=statistic,
        p_value=p, difference=difference, difference_ci=interval, seeds=seeds, counts=pooled,
        seed_differences=per_seed, seed_difference_ci=seed_ci, seed_difference_p=seed_p,
    )  # fmt: skip


def seed_differences(differences: Sequence[float]) -> tuple[tuple[float, float] | None, float | None]:
    """The 95% t interval of the mean per-seed difference and the one-sample t test's p (None for fewer than
    2 seeds; p is None, too, when every seed differs by the same amount)."""
    if len(differences) < 2:
        return None, None
    mean, low, high = mean_interval(differences)
    spread = statistics.stdev(differences)
    if spread == 0:
        return (low, high), None
    from scipy.stats import t

    statistic = mean / (spread / math.sqrt(len(differences)))
    return (low, high), float(2 * t.sf(abs(statistic), len(differences) - 1))


def smooth(values: Sequence[float], smoothing: float) -> list[float]:
    """The debiased exponential moving average TensorBoard and W&B draw (`smoothing` in [0, 1): 0 is none).

    >>> smooth([1.0, 0.0, 1.0], 0.0), [round(v, 3) for v in smooth([1.0, 0.0], 0.5)]
    ([1.0, 0.0, 1.0], [1.0, 0.333])
    """
    if not 0 <= smoothing < 1:
        raise ValueError(f"smoothing must be in [0, 1), not {smoothing}.")
    out, last = [], 0.0
    for step, value in enumerate(values, 1):
        last = smoothing * last + (1 - smoothing) * value
        out.append(last / (1 - smoothing**step))
    return out


def band(curves: Sequence[Sequence[float | None]]) -> list[tuple[float, float, float] | None]:
    """At each index, (mean, low, high) over the curves that have a value there (a 95% t interval across
    them); None where none has."""
    length = max((len(c) for c in curves), default=0)
    out: list[tuple[float, float, float] | None] = []
    for i in range(length):
        values = [c[i] for c in curves if i < len(c) and c[i] is not None]
        out.append(mean_interval(values) if values else None)  # type: ignore[arg-type]
    return out


def on_time_grid(
    times: Sequence[float], values: Sequence[float], grid: Sequence[float]
) -> list[float | None]:
    """A run's values as a step function on `grid`: at each moment, the latest value finished by then;
    None before its first and after its last attempt (it had not started, or had ended)."""
    out: list[float | None] = []
    i = -1
    for moment in grid:
        while i + 1 < len(times) and times[i + 1] <= moment:
            i += 1
        out.append(values[i] if i >= 0 and times and moment <= times[-1] else None)
    return out


def windows(runs: Sequence[SeedArm], count: int = 10, budget: int | None = None) -> list[dict[str, Any]]:
    """The arm's attempts in `count` windows of positions (tenths of `budget`, by default of the longest
    run; fewer where the budget is under `count`), pooled over its seeds: valid attempts, their Wilson
    interval, and the mean reward."""
    budget = budget or max((len(r.valid) for r in runs), default=0)
    count = max(min(count, budget), 1)
    rows = []
    for w in range(count):
        start, end = w * budget // count, (w + 1) * budget // count
        valid = [v for r in runs for v in r.valid[start:end]]
        rewards = [x for r in runs for x in r.rewards[start:end]]
        counts = Counts(sum(valid), len(valid))
        rows.append({
            "window": w + 1, "from": start + 1, "to": end, "valid": counts.valid, "attempts": counts.attempts,
            "valid_rate": counts.rate, "valid_rate_ci": counts.interval(),
            "mean_reward": statistics.fmean(rewards) if rewards else None,
        })  # fmt: skip
    return rows


def arm_curves(
    runs: Sequence[SeedArm], smoothing: float
) -> dict[str, list[tuple[float, float, float] | None]]:
    """One arm's reward and valid-rate curves against attempts: each run smoothed, then banded over seeds."""
    return {name: band([smooth(c, smoothing) for c in curves]) for name, curves in _series(runs).items()}


def arm_time_curves(
    runs: Sequence[SeedArm], smoothing: float, grid: Sequence[float]
) -> dict[str, list[tuple[float, float, float] | None]]:
    """The same curves against wall-clock: each run smoothed, held on `grid`, then banded over seeds."""
    return {
        name: band(
            [
                on_time_grid(r.finished_s, smooth(c, smoothing), grid)
                for r, c in zip(runs, curves, strict=True)
            ]
        )
        for name, curves in _series(runs).items()
    }


def time_grid(runs: Sequence[SeedArm], points: int = 100) -> list[float]:
    """`points` moments evenly from 0 to the longest run's last finished attempt."""
    end = max((r.finished_s[-1] for r in runs if r.finished_s), default=0.0)
    return [end * i / (points - 1) for i in range(points)] if end > 0 else []


def _series(runs: Sequence[SeedArm]) -> dict[str, list[list[float]]]:
    return {"reward": [list(r.rewards) for r in runs], "valid": [[float(v) for v in r.valid] for r in runs]}
