"""bench/rl_vs_static.py's analysis, pure: saved pieces in, the study's summary out (the primary endpoint's
counts and test, the secondary endpoints, the diagnostics a null result is checked against). The statistics
themselves are rl_core.studies', which the product's study page uses too."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from _lm import AttemptRecord

from rl_core.studies import SeedArm, compare_arms, seed_counts, wilson_interval, windows

HIGHER_IS_BETTER = {"diabetes-progression": True, "breast-cancer-diagnosis": True}
Piece = dict[str, Any]
"""One (seed, arm) run as saved: {"seed", "arm", "records": [AttemptRecord as a dict], "wall_s", "updates",
"update_metrics", "tokens_per_s"}."""


def planned(config: Mapping[str, Any]) -> list[tuple[int, str]]:
    """The pieces in the order they run: seed by seed, each seed's arms one after the other.

    >>> planned({"seeds": [0, 1], "arms": ["static", "rl"]})
    [(0, 'static'), (0, 'rl'), (1, 'static'), (1, 'rl')]
    """
    return [(seed, arm) for seed in config["seeds"] for arm in config["arms"]]


def seed_arm(piece: Piece) -> SeedArm:
    records = [AttemptRecord(**r) for r in piece["records"]]
    return SeedArm(
        arm=piece["arm"], seed=piece["seed"], valid=[r.valid for r in records],
        versions=[r.version for r in records], rewards=[r.reward for r in records],
    )  # fmt: skip


def analyse(pieces: Mapping[tuple[int, str], Piece], config: Mapping[str, Any]) -> dict[str, Any]:
    """The study's results from whatever pieces exist: per arm the primary endpoint's counts, the secondary
    endpoints and the diagnostics; the test wherever both arms share a seed (`complete` says whether every
    seed does: before that the test is interim, progress and not a result)."""
    arms = list(config["arms"])
    runs = [seed_arm(pieces[key]) for key in planned(config) if key in pieces]
    complete = [seed for seed in config["seeds"] if all((seed, arm) in pieces for arm in arms)]
    counted = {
        seed: seed_counts([r for r in runs if r.seed == seed], after_first_update=True) for seed in complete
    }
    results: dict[str, Any] = {
        "complete": len(complete) == len(config["seeds"]),
        "seeds_complete": complete,
        "warm_start_by_seed": warm_start_by_seed(pieces),
        "arms": {arm: arm_results(arm, pieces, complete, counted, config) for arm in arms},
    }
    tests = compare_arms([r for r in runs if r.seed in complete], arms, after_first_update=True)
    if tests:
        test = tests[0].as_dict()
        results["test"] = {
            "name": test["name"], "p_value": test["p_value"], "statistic": test["statistic"],
            "difference": test["difference"], "difference_ci": test["difference_ci"],
            "difference_of": f"{test['arm']} minus {test['reference']}, valid rate",
            "seed_differences": test["seed_differences"], "seed_difference_ci": test["seed_difference_ci"],
            "seed_difference_p": test["seed_difference_p"],
        }  # fmt: skip
    return results


def warm_start_by_seed(pieces: Mapping[tuple[int, str], Piece]) -> dict[int, str | None]:
    """Each seed's warm start (its fingerprint; None for the grammar policy). Seeds may differ (a sitting on
    another machine builds the warm start anew, and the test's strata are the seeds), a seed's arms may not:
    then the seed compares more than RL against static, and the analysis is refused.

    >>> warm_start_by_seed({(0, "static"): {"warm_start": "ab"}, (0, "rl"): {"warm_start": "ab"},
    ...                     (1, "static"): {"warm_start": "cd"}})
    {0: 'ab', 1: 'cd'}
    """
    found: dict[int, str | None] = {}
    for (seed, _arm), piece in pieces.items():
        if seed in found and found[seed] != piece.get("warm_start"):
            raise SystemExit(f"seed {seed}'s arms began from different warm starts, so it cannot be compared")
        found[seed] = piece.get("warm_start")
    return found


def arm_results(
    arm: str,
    pieces: Mapping[tuple[int, str], Piece],
    seeds: Sequence[int],
    counted: Mapping[int, Any],
    config: Mapping[str, Any],
) -> dict[str, Any]:
    mine = [pieces[(seed, arm)] for seed in seeds]
    counts = [counted[seed][arm] for seed in seeds if counted[seed] is not None]
    after, valid_after = sum(c.attempts for c in counts), sum(c.valid for c in counts)
    records = [AttemptRecord(**r) for p in mine for r in p["records"]]
    tenths = windows([seed_arm(p) for p in mine], 10, config["attempts_per_seed"])
    return {
        "attempts": len(records),
        "attempts_after_first_update": after,
        "valid_after": valid_after,
        "valid_rate": valid_after / after if after else None,
        "valid_rate_ci": list(wilson_interval(valid_after, after)) if after else None,
        "valid_rate_all_attempts": sum(r.valid for r in records) / len(records) if records else None,
        "drawn_after_an_update": sum(r.version > 0 for r in records),
        "mean_reward_by_tenth": [w["mean_reward"] for w in tenths],
        "valid_rate_by_tenth": [w["valid_rate"] for w in tenths],
        "best_score_by_seed": {slug: [best(p, slug) for p in mine] for slug in config["slugs"]},
        "diagnostics": diagnostics(mine, config),
        "seconds_per_attempt": sum(p["wall_s"] for p in mine) / len(records) if records else None,
    }


def best(piece: Piece, slug: str) -> float | None:
    scores = [
        r["score"] for r in piece["records"] if r["task"] == slug and r["valid"] and r["score"] is not None
    ]
    return (max if HIGHER_IS_BETTER[slug] else min)(scores) if scores else None


def diagnostics(pieces: Sequence[Piece], config: Mapping[str, Any]) -> dict[str, Any]:
    """What a null result is checked against: did gradients reach the adapters, did batches carry a signal
    (rewards that differ within a batch), did the valid rate move within the runs."""
    batch = config["settings"]["batch"]
    spreads = []
    for piece in pieces:
        rewards = [r["reward"] for r in piece["records"]]
        spreads += [
            statistics.pstdev(rewards[i : i + batch]) for i in range(0, len(rewards) - batch + 1, batch)
        ]
    metrics = [m for p in pieces for m in p["update_metrics"]]

    def mean_of(key: str) -> float | None:
        values = [m[key] for m in metrics if key in m]
        return statistics.fmean(values) if values else None

    halves = [[r["valid"] for r in p["records"]] for p in pieces]
    return {
        "updates": sum(p["updates"] for p in pieces),
        "grad_norm_mean": mean_of("charts/grad_norm"),
        "clip_fraction_mean": mean_of("charts/clip_fraction"),
        "reward_spread_within_batches_mean": statistics.fmean(spreads) if spreads else None,
        "batches_with_no_reward_spread": sum(s == 0 for s in spreads),
        "timeouts": sum(r["status"] == "timeout" for p in pieces for r in p["records"]),
        "valid_rate_first_half": rate([v for h in halves for v in h[: len(h) // 2]]),
        "valid_rate_second_half": rate([v for h in halves for v in h[len(h) // 2 :]]),
        "tokens_per_s": statistics.fmean(t for p in pieces for t in p["tokens_per_s"])
        if any(p["tokens_per_s"] for p in pieces) else None,
    }  # fmt: skip


def rate(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def progress(piece: Piece) -> dict[str, Any]:
    """A saved piece in a line of the summary: what has run so far (progress, not a result)."""
    records = piece["records"]
    return {
        "seed": piece["seed"], "arm": piece["arm"], "attempts": len(records),
        "valid": sum(r["valid"] for r in records), "updates": piece["updates"], "wall_s": piece["wall_s"],
        "warm_start": piece.get("warm_start"),
    }  # fmt: skip
