"""Launch share against completion share: whether a run's learner sees fast programs more often than its
policy launched them (DESIGN.md §2).

The paper's duration weights correct a bias that exists only where completions arrive ∝ π/Δt. This module
shows a run's own evidence: the run's wall-clock time, from its first launch to its newest event, is cut
into WINDOWS equal slices, and per slice each group's share of the attempts launched in it is set against
its share of the attempts that finished in it. Groups are program families where every attempt names one
(the grammar policy), else Δt buckets (a language model). Evaluation attempts (kind eval-*) and lost ones
are left out. An attempt in flight counts in the launch share by its family; with Δt buckets its bucket is
not known yet, so it is left out (and counted in `in_flight_left_out`).

The summary is the total variation distance between the two shares, averaged over the slices weighted by
their completions, set against the distance two samples of the same sizes from one distribution would show
by chance. Not done: a formal test (a launch and its completion in one slice are the same attempt, so the
two samples are not independent), and separating bias from lag (a slow family launched at the end of one
slice finishes in a later one, so while the policy moves, shares differ without any arrival bias; and in
the first slice only fast programs can have finished yet). Launch share stands for π only where each launch
is a fresh draw from the policy: where a slot's launches continue its own program (the paper's slots), a
slot relaunches as often as it completes, so in a steady state both shares lean fast alike.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from statistics import median
from typing import Any

from webapp.runs.models import Attempt, Run
from webapp.runs.selectors import EVAL_PREFIX

WINDOWS = 10
MIN_FINISHED = 30
"""Fewer finished attempts than this and the summary says it cannot tell."""
MARGIN = 0.05
"""How far the distance must exceed the chance level before the summary calls it a bias."""
BUCKETS = ((1.0, "<1 s"), (10.0, "1–10 s"), (100.0, "10–100 s"), (math.inf, "≥100 s"))
NO_DURATION = "no Δt"
READINGS = {
    "too_few": "too few finished attempts to tell",
    "none": "no measurable arrival bias",
    "fast": "fast programs over-represented in completions",
    "slow": "slow programs over-represented in completions",
    "differ": "launch and completion shares differ, though not by speed",
}


@dataclass(frozen=True)
class Arrival:
    """One attempt as the chart sees it: seconds since the run's first launch, when it was launched and
    (None while in flight) when it finished; its group, None where not known yet; its execution Δt."""

    launched_s: float
    finished_s: float | None
    group: str | None
    duration_s: float | None


def duration_bucket(duration_s: float | None) -> str:
    """The log-spaced Δt bucket of an execution time in seconds.

    >>> [duration_bucket(d) for d in (0.2, 1.0, 42.0, 100.0, None)]
    ['<1 s', '1–10 s', '10–100 s', '≥100 s', 'no Δt']
    """
    if duration_s is None:
        return NO_DURATION
    return next(label for upper, label in BUCKETS if duration_s < upper)


def window_of(t_s: float, *, end_s: float, windows: int = WINDOWS) -> int:
    """The index of the slice of [0, end_s] that holds t_s; end_s itself belongs to the last.

    >>> [window_of(t, end_s=10.0, windows=5) for t in (0.0, 1.9, 2.0, 10.0)]
    [0, 0, 1, 4]
    """
    if end_s <= 0:
        return 0
    return min(int(t_s / end_s * windows), windows - 1)


def count_by_window(
    arrivals: list[Arrival], *, windows: int = WINDOWS
) -> tuple[list[Counter[str]], list[Counter[str]], float]:
    """Per slice, attempts launched and attempts finished by group (attempts whose group is unknown are
    left out), and the run's span in seconds (its newest launch or finish)."""
    times = [a.launched_s for a in arrivals] + [a.finished_s for a in arrivals if a.finished_s is not None]
    end_s = max(times, default=0.0)
    launched: list[Counter[str]] = [Counter() for _ in range(windows)]
    finished: list[Counter[str]] = [Counter() for _ in range(windows)]
    for a in arrivals:
        if a.group is None:
            continue
        launched[window_of(a.launched_s, end_s=end_s, windows=windows)][a.group] += 1
        if a.finished_s is not None:
            finished[window_of(a.finished_s, end_s=end_s, windows=windows)][a.group] += 1
    return launched, finished, end_s


def shares(counts: Counter[str]) -> dict[str, float]:
    """Each group's fraction of the total; {} for no attempts.

    >>> shares(Counter({"a": 3, "b": 1}))
    {'a': 0.75, 'b': 0.25}
    """
    total = sum(counts.values())
    return {group: n / total for group, n in counts.items()} if total else {}


def total_variation(p: dict[str, float], q: dict[str, float]) -> float:
    """Half the summed absolute difference of two distributions over the same groups: 0 when equal,
    1 when disjoint.

    >>> total_variation({"a": 0.75, "b": 0.25}, {"a": 0.5, "b": 0.5})
    0.25
    """
    return sum(abs(p.get(g, 0.0) - q.get(g, 0.0)) for g in p.keys() | q.keys()) / 2


def chance_distance(launched: Counter[str], finished: Counter[str]) -> float:
    """The total variation distance expected by chance alone between a sample of `launched` and one of
    `finished` drawn from their pooled distribution (normal approximation, E|X| = σ·√(2/π) per group).

    >>> round(chance_distance(Counter({"a": 50, "b": 50}), Counter({"a": 50, "b": 50})), 3)
    0.056
    """
    n_a, n_b = sum(launched.values()), sum(finished.values())
    pooled = shares(launched + finished)
    spread = sum(math.sqrt(p * (1 - p) * (1 / n_a + 1 / n_b)) for p in pooled.values())
    return spread * math.sqrt(2 / math.pi) / 2


def typical_durations(arrivals: list[Arrival]) -> dict[str, float]:
    """Each group's median Δt in seconds over its finished attempts (groups with none are absent)."""
    by_group: dict[str, list[float]] = {}
    for a in arrivals:
        if a.group is not None and a.finished_s is not None and a.duration_s is not None:
            by_group.setdefault(a.group, []).append(a.duration_s)
    return {group: median(durations) for group, durations in by_group.items()}


def speed_gap(launch: dict[str, float], completion: dict[str, float], typical_s: dict[str, float]) -> float:
    """How much faster (negative) or slower (positive) the finished attempts' groups are than the
    launched ones', in decades of typical Δt; groups with no typical Δt are left out.

    >>> speed_gap({"fast": 0.5, "slow": 0.5}, {"fast": 1.0}, {"fast": 1.0, "slow": 100.0})
    -1.0
    """

    def mean_decades(share: dict[str, float]) -> float:
        known = {g: s for g, s in share.items() if g in typical_s}
        total = sum(known.values())
        return (
            sum(s * math.log10(max(typical_s[g], 1e-3)) for g, s in known.items()) / total if total else 0.0
        )

    return mean_decades(completion) - mean_decades(launch)


def window_rows(
    launched: list[Counter[str]], finished: list[Counter[str]], *, end_s: float, typical_s: dict[str, float]
) -> list[dict[str, Any]]:
    """One row per slice: its bounds in seconds, counts and shares by group, and (where it both launched
    and finished attempts) the distance between the shares, its chance level, and the speed gap."""
    width = end_s / len(launched)
    rows = []
    for i, (out, back) in enumerate(zip(launched, finished, strict=True)):
        launch, completion = shares(out), shares(back)
        both = bool(out) and bool(back)
        rows.append({
            "start_s": i * width, "end_s": (i + 1) * width, "launched": dict(out), "finished": dict(back),
            "launch_share": launch, "completion_share": completion,
            "distance": total_variation(launch, completion) if both else None,
            "chance": chance_distance(out, back) if both else None,
            "speed_gap": speed_gap(launch, completion, typical_s) if both else None,
        })  # fmt: skip
    return rows


def weighted_mean(rows: list[dict[str, Any]], key: str) -> float | None:
    """The mean of `key` over the rows that have it, each weighted by its finished attempts."""
    scored = [(sum(row["finished"].values()), row[key]) for row in rows if row[key] is not None]
    total = sum(weight for weight, _ in scored)
    return sum(weight * value for weight, value in scored) / total if total else None


def verdict(*, distance: float | None, chance: float | None, gap: float | None, finished: int) -> str:
    """One of READINGS' keys: too few attempts, no bias beyond chance + MARGIN, or which way it leans."""
    if distance is None or chance is None or gap is None or finished < MIN_FINISHED:
        return "too_few"
    if distance - chance <= MARGIN:
        return "none"
    return "fast" if gap < 0 else "slow" if gap > 0 else "differ"


def summary(rows: list[dict[str, Any]], *, launched: int, finished: int) -> dict[str, Any]:
    """The run in one number: the distance (weighted over slices), its chance level, the speed gap in
    decades of Δt, the sample it rests on, and its reading."""
    distance, chance, gap = (weighted_mean(rows, key) for key in ("distance", "chance", "speed_gap"))
    kind = verdict(distance=distance, chance=chance, gap=gap, finished=finished)
    windows = sum(row["distance"] is not None for row in rows)
    return {"distance": distance, "chance": chance, "speed_gap": gap, "launched": launched,
            "finished": finished, "min_finished": MIN_FINISHED, "windows": windows, "verdict": kind,
            "reading": READINGS[kind]}  # fmt: skip


def arrival_shares(arrivals: list[Arrival], *, grouping: str, windows: int = WINDOWS) -> dict[str, Any]:
    """The run page's arrival chart and summary from a run's attempts (see the module docstring);
    `grouping` ("family" or "duration") says what the groups are."""
    launched, finished, end_s = count_by_window(arrivals, windows=windows)
    typical_s = typical_durations(arrivals)
    rows = window_rows(launched, finished, end_s=end_s, typical_s=typical_s)
    groups = {a.group for a in arrivals if a.group is not None}
    counted = sum(sum(c.values()) for c in launched)
    return {
        "grouping": grouping,
        "groups": sorted(groups, key=lambda g: (typical_s.get(g, math.inf), g)),  # fastest first
        "typical_duration_s": typical_s,
        "span_s": end_s,
        "windows": rows,
        "in_flight": sum(a.finished_s is None for a in arrivals),
        "in_flight_left_out": sum(a.group is None for a in arrivals),
        "summary": summary(rows, launched=counted, finished=sum(sum(c.values()) for c in finished)),
    }


def run_arrival_shares(*, run: Run, windows: int = WINDOWS) -> dict[str, Any]:
    """`arrival_shares` over the run's attempts, evaluation and lost ones left out: by family where every
    attempt names one, else by Δt bucket."""
    rows = list(
        run.attempts.exclude(status=Attempt.Status.LOST)
        .exclude(prompt_kind__startswith=EVAL_PREFIX)
        .order_by()
        .values("started_at", "finished_at", "family", "duration_s")
    )
    by_family = bool(rows) and all(row["family"] for row in rows)
    first = min((row["started_at"] for row in rows), default=None)
    arrivals = [arrival_of(row, first=first, by_family=by_family) for row in rows]
    return arrival_shares(arrivals, grouping="family" if by_family else "duration", windows=windows)


def arrival_of(row: dict[str, Any], *, first: datetime | None, by_family: bool) -> Arrival:
    """An attempt row (started_at, finished_at, family, duration_s) as an Arrival, its times counted from
    `first`: grouped by family, or by Δt bucket once it finished."""
    finished = row["finished_at"]
    bucket = duration_bucket(row["duration_s"]) if finished else None
    return Arrival(
        launched_s=(row["started_at"] - first).total_seconds(),
        finished_s=(finished - first).total_seconds() if finished else None,
        group=row["family"] if by_family else bucket,
        duration_s=row["duration_s"],
    )
