"""The paper's central comparison in small: the same small LM with RL against itself without updates.

What runs: SmolLM2-135M-Instruct, warm-started on GrammarPolicy demonstrations (bench/_lm.py, the same
cached warm start as bench/lm_valid_rate.py and bench/lm_throughput.py), on two bundled competitions. Two
arms with the same attempt budget, seeds and loop, on the path an LM run takes (bench/_lm.py's PATHS["new"]:
asynchronous, K = 2 sandboxed actors, the background sampler drawing batches of 8, B = 8, solve/improve mix):
  static  no updates: the model's best of N samples (the "static model" of the paper, in small);
  rl      PPO updates every batch (duration-aware weights, running-mean baseline, LoRA).
Per seed the two arms start from the same policy and seed; the arms run one after the other.
The paper (arXiv 2509.01684) compares a 3B model with RL against much larger static models with a
scaffold, over days on 8 GPUs; this is the same question for a 135M model over about an hour on 2 CPU
cores, so it shows the mechanism, not the paper's margin.

Reported: for each arm and seed, the valid rate and each competition's best score against attempts (a
curve); per arm, pooled over seeds, the valid rate with its 95% Wilson interval (attempts counted as
independent trials) and the valid rate of each seed's later half (where RL's samples come from updated
policies), each competition's best score per seed with the seeds' mean and 95% t interval. Tests, RL against
static: Fisher's exact test on the valid counts (all attempts, and the later halves); per competition the
exact rank-sum test on the seeds' best scores (a seed with no valid attempt ranks lowest; with 3 seeds per
arm the smallest possible p is 0.1, so a best-score difference cannot reach p < 0.05 there) and a
Mann-Whitney test on the scores of all valid attempts. A p of 0.05 or more is reported as no measurable
difference. The JSON keeps every attempt's record.

Run: python bench/rl_vs_static.py [--quick] [--json PATH] [--seeds N] [--attempts N]
(quick: 1 seed x 16 attempts per arm; full: 3 seeds x 24 attempts per arm and seed, 72 per arm)
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict
from typing import Any

from _common import bench_arguments, format_value, machine_info, print_table, target, write_json
from _lm import PATHS, ArmResult, LMSettings, curve, path_policy, run_arm, tasks_for, warm_start
from _stats import fisher_exact_p, mann_whitney_p, rank_permutation_p, ranks, t_interval, wilson_interval

SLUGS = ("diabetes-progression", "breast-cancer-diagnosis")
ARMS = ("static", "rl")
SIGNIFICANCE = 0.05


def main() -> None:
    args = bench_arguments(
        __doc__.splitlines()[0], seeds="seeds per arm", attempts="attempts per arm and seed"
    )
    seeds = tuple(range(args.seeds or (1 if args.quick else 3)))
    attempts = args.attempts or (16 if args.quick else 24)
    settings, path = LMSettings(), PATHS["new"]
    tasks = tasks_for(SLUGS)
    adapter, _ = warm_start(tasks, settings)
    points = list(range(settings.batch, attempts + 1, settings.batch))
    runs: dict[str, list[ArmResult]] = {name: [] for name in ARMS}
    config = {
        "slugs": SLUGS,
        "attempts_per_seed": attempts,
        "seeds": seeds,
        "path": vars(path),
        **vars(settings),
    }
    for seed in seeds:
        for name in ARMS:
            policy = path_policy(settings, path, adapter=adapter, seed=seed)
            arm = run_arm(
                name, policy, tasks, settings, attempts=attempts, learn=name == "rl", seed=seed, path=path
            )
            runs[name].append(arm)
            rows = curve(arm, tasks, points)
            print_table(rows, list(rows[0]), title=f"{name}, seed {seed}: against attempts")
            save(args.json, config, runs, tasks, points)
    results = save(args.json, config, runs, tasks, points)
    report(results, attempts, seeds)


def save(json_path, config: dict, runs: dict[str, list[ArmResult]], tasks, points) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The results so far (every finished arm), written at once so that an interrupted run keeps them."""
    results: dict[str, Any] = {name: summarise(arms, tasks) for name, arms in runs.items() if arms}
    results["curves"] = {name: [curve(arm, tasks, points) for arm in arms] for name, arms in runs.items()}
    results["records"] = {
        name: [[asdict(r) for r in arm.records] for arm in arms] for name, arms in runs.items()
    }
    targets: dict[str, Any] = {}
    if all(runs[name] for name in ARMS):
        results["tests"] = compare(runs, tasks)
        gap = results["rl"]["valid_rate"] - results["static"]["valid_rate"]
        targets["rl_valid_rate_minus_static"] = target(gap, ">=", 0.0)
        for t in tasks:
            targets[f"rl_best_vs_static:{t.info.slug}"] = best_gap_target(results, t)
    write_json(
        json_path,
        benchmark="rl_vs_static",
        machine=machine_info(),
        config=config,
        targets=targets,
        results=results,
    )
    return results


def summarise(arms: list[ArmResult], tasks) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """One arm over its seeds: pooled valid counts with intervals, and per-seed best scores."""
    records = [r for arm in arms for r in arm.records]
    late = [r for arm in arms for r in later_half(arm)]
    valid, late_valid = sum(r.valid for r in records), sum(r.valid for r in late)
    best: dict[str, Any] = {}
    for t in tasks:
        by_seed = [arm.best(t.info.slug, t.info.higher_is_better) for arm in arms]
        found = [b for b in by_seed if b is not None]
        best[t.info.slug] = {
            "by_seed": by_seed,
            "mean": statistics.fmean(found) if found else None,
            "ci95": t_interval(found) if len(found) == len(by_seed) else None,
        }
    return {
        "attempts": len(records),
        "valid": valid,
        "valid_rate": valid / len(records),
        "valid_rate_ci95": wilson_interval(valid, len(records)),
        "valid_rate_by_seed": [arm.valid_rate() for arm in arms],
        "late_attempts": len(late),
        "late_valid": late_valid,
        "late_valid_rate": late_valid / len(late) if late else None,
        "late_valid_rate_ci95": wilson_interval(late_valid, len(late)),
        "drawn_after_an_update": sum(r.version > 0 for r in records),
        "mean_reward": statistics.fmean(r.reward for r in records),
        "updates_per_seed": statistics.fmean(arm.updates for arm in arms),
        "seconds_per_attempt": sum(arm.wall_s for arm in arms) / len(records),
        "best_score": best,
    }


def later_half(arm: ArmResult) -> list:  # type: ignore[type-arg]
    """The attempts that finished in the second half of the arm's budget."""
    return arm.records[len(arm.records) // 2 :]


def compare(runs: dict[str, list[ArmResult]], tasks) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """RL against static: one row per test, with its p and what it says at SIGNIFICANCE."""
    rl, static = runs["rl"], runs["static"]
    rows = [
        proportion_row(
            "valid rate, all attempts",
            [r for a in rl for r in a.records],
            [r for a in static for r in a.records],
        ),
        proportion_row(
            "valid rate, later halves",
            [r for a in rl for r in later_half(a)],
            [r for a in static for r in later_half(a)],
        ),
    ]
    for t in tasks:
        slug, sign = t.info.slug, 1.0 if t.info.higher_is_better else -1.0
        rl_best, static_best = seed_bests(rl, t), seed_bests(static, t)
        rl_signed, static_signed = signed(rl_best, sign), signed(static_best, sign)
        p = rank_permutation_p(rl_signed, static_signed)
        gap = mean_rank_gap(rl_signed, static_signed)
        row = test_row(f"best score per seed (mean rank), {slug}", gap, "exact rank-sum", p)
        rows.append(
            row
            | {"rl": rl_best, "static": static_best, "mean_best_gap": mean_gap(rl_best, static_best, sign)}
        )
        rl_scores = valid_scores(rl, slug)
        static_scores = valid_scores(static, slug)
        p_scores = mann_whitney_p(rl_scores, static_scores)
        if p_scores is not None:
            difference = sign * (statistics.median(rl_scores) - statistics.median(static_scores))
            rows.append(
                test_row(f"scores of valid attempts (median), {slug}", difference, "Mann-Whitney", p_scores)
            )
    return rows


def seed_bests(arms: list[ArmResult], task) -> list[float | None]:  # type: ignore[no-untyped-def]
    """Each seed's best score on `task` (None: that seed had no valid attempt on it)."""
    return [a.best(task.info.slug, task.info.higher_is_better) for a in arms]


def signed(values: list[float | None], sign: float) -> list[float | None]:
    return [None if v is None else sign * v for v in values]


def mean_rank_gap(rl: list[float | None], static: list[float | None]) -> float:
    """RL's mean rank minus static's among all seeds' (signed) bests, None ranking lowest: > 0, RL better."""
    pooled = ranks([*rl, *static])
    return statistics.fmean(pooled[: len(rl)]) - statistics.fmean(pooled[len(rl) :])


def mean_gap(rl: list[float | None], static: list[float | None], sign: float) -> float:
    """How much better RL's mean best is, over the seeds that have one (nan where an arm has none)."""
    rl_found, static_found = [v for v in rl if v is not None], [v for v in static if v is not None]
    if not rl_found or not static_found:
        return math.nan
    return sign * (statistics.fmean(rl_found) - statistics.fmean(static_found))


def valid_scores(arms: list[ArmResult], slug: str) -> list[float]:
    return [r.score for a in arms for r in a.records if r.task == slug and r.valid and r.score is not None]


def proportion_row(measure: str, rl: list, static: list) -> dict[str, Any]:  # type: ignore[type-arg]
    k_rl, k_static = sum(r.valid for r in rl), sum(r.valid for r in static)
    p = fisher_exact_p(k_rl, len(rl), k_static, len(static))
    row = test_row(measure, k_rl / len(rl) - k_static / len(static), "Fisher exact", p)
    return row | {"rl": f"{k_rl}/{len(rl)}", "static": f"{k_static}/{len(static)}"}


def test_row(measure: str, rl_better_by: float, test: str, p: float) -> dict[str, Any]:
    """`rl_better_by` > 0 means RL did better (for a lower-is-better metric, its score is lower)."""
    reading = (
        "no measurable difference" if p >= SIGNIFICANCE else ("RL better" if rl_better_by > 0 else "RL worse")
    )
    return {"measure": measure, "rl_better_by": rl_better_by, "test": test, "p": p, "reading": reading}


def best_gap_target(results: dict[str, Any], task) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    slug, sign = task.info.slug, 1.0 if task.info.higher_is_better else -1.0
    rl, static = results["rl"]["best_score"][slug]["mean"], results["static"]["best_score"][slug]["mean"]
    gap = float("-inf") if rl is None else (float("inf") if static is None else sign * (rl - static))
    return target(gap, ">=", 0.0) | {"rl": rl, "static": static}


def listed(value: Any) -> Any:
    """A list of per-seed values as one short cell."""
    return ", ".join(format_value(v) for v in value) if isinstance(value, list) else value


def interval(bounds: tuple[float, float] | None) -> str:
    return "-" if bounds is None else f"[{bounds[0]:.4g}, {bounds[1]:.4g}]"


def report(results: dict[str, Any], attempts: int, seeds: tuple[int, ...]) -> None:
    rows = []
    for name in ARMS:
        arm = results[name]
        row = {
            "arm": name,
            "valid": f"{arm['valid']}/{arm['attempts']}",
            "valid 95% CI": interval(arm["valid_rate_ci95"]),
            "later half valid": f"{arm['late_valid']}/{arm['late_attempts']}",
            "drawn after an update": arm["drawn_after_an_update"],
            "s/attempt": arm["seconds_per_attempt"],
        }
        for slug in SLUGS:
            best = arm["best_score"][slug]
            row[f"best {slug} (mean over seeds with one)"] = best["mean"]
            row[f"best {slug} 95% CI"] = interval(best["ci95"])
        rows.append(row)
    print_table(rows, list(rows[0]), title=f"{len(seeds)} seeds x {attempts} attempts per arm")
    tests = [{k: listed(v) for k, v in row.items()} for row in results["tests"]]
    print_table(
        tests, list(tests[0]), title=f"RL against static (p < {SIGNIFICANCE}: a measurable difference)"
    )


if __name__ == "__main__":
    main()
