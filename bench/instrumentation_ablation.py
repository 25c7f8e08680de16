"""The paper's second ablation in small: learning with and without partial credit from instrumentation.

What runs: SmolLM2-135M-Instruct, warm-started on GrammarPolicy demonstrations of two *other* bundled
competitions (bench/_lm.py's cached warm start: diabetes-progression, breast-cancer-diagnosis), then
trained with RL on penguins-species, which it has not seen: missing values and text categories make most
of its early programs fail. Two arms, everything else equal (the loop: synchronous, B = 8, PPO, solve and
improve prompts, the `paper` reward preset: -10 for no valid submission, the raw score for a valid one):
  instrumented     markers inserted by the AST rules; +0.1 per stage reached (the paper's partial credit)
  lm_instrumented  the paper's instrumenter: the policy's frozen base model (adapters off) rewrites each
                   program with markers before it runs; its version runs only if, without the markers, its
                   AST equals the original's, else the AST rules' markers do ("lm-fallback"); same credit
  uninstrumented   no markers: a failure is -10 whatever it reached
>= 3 seeds per arm. Reported against attempts: valid-submission rate and mean reward (each arm's own
reward; the instrumented ones include the stage credit, so the valid rate and the best score are the
comparable measures), and at the end, per arm, the means over seeds, and for each arm the share of
attempts by instrumenter (how often the LM's markers were accepted).

Run: python bench/instrumentation_ablation.py [--quick] [--json PATH]   (about 50 minutes quick, 90 full for
the two AST arms; the LM arm, not yet timed, adds one greedy decode of up to 2 x 1024 tokens per attempt)
"""

from __future__ import annotations

import statistics

from _common import bench_arguments, machine_info, print_table, target, write_json
from _lm import LMSettings, curve, lm_policy, run_arm, tasks_for, warm_start

WARM_SLUGS = ("diabetes-progression", "breast-cancer-diagnosis")
TARGET_SLUG = "penguins-species"
ARMS = {"instrumented": (True, "ast"), "lm_instrumented": (True, "lm"), "uninstrumented": (False, "ast")}
"""Arm name -> (insert markers, instrumenter)."""


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0])
    attempts, seeds = (16, (0, 1, 2)) if args.quick else (32, (0, 1, 2))
    settings = LMSettings()
    adapter, _ = warm_start(tasks_for(WARM_SLUGS), settings)
    tasks = tasks_for((TARGET_SLUG,))
    points = list(range(settings.batch, attempts + 1, settings.batch))
    runs: dict[str, list] = {name: [] for name in ARMS}
    for seed in seeds:
        for name, (instrument, instrumenter) in ARMS.items():
            policy = lm_policy(settings, adapter=adapter, seed=seed)
            arm = run_arm(name, policy, tasks, settings, attempts=attempts, learn=True, instrument=instrument,
                          instrumenter=instrumenter, preset="paper", seed=seed)  # fmt: skip
            runs[name].append(arm)
            rows = curve(arm, tasks, points)
            print_table(rows, list(rows[0]), title=f"{name}, seed {seed}: against attempts")
    curves = {name: mean_curve([curve(arm, tasks, points) for arm in arms]) for name, arms in runs.items()}
    for name, rows in curves.items():
        print_table(rows, list(rows[0]), title=f"{name}: mean over seeds {seeds}")
    results = {name: final(arms, tasks) for name, arms in runs.items()} | {"curves": curves}
    results["first_batch_valid_rate"] = {
        name: statistics.fmean(arm.valid_rate(first=settings.batch) for arm in arms)
        for name, arms in runs.items()
    }
    results["instrumenter_share"] = {name: instrumenter_share(arms) for name, arms in runs.items()}
    gap = results["instrumented"]["valid_rate"] - results["uninstrumented"]["valid_rate"]
    write_json(
        args.json, benchmark="instrumentation_ablation", machine=machine_info(),
        config={"warm_start_on": WARM_SLUGS, "trained_on": TARGET_SLUG, "attempts": attempts, "seeds": seeds,
                **vars(settings)},
        targets={"instrumented_valid_rate_gain": target(gap, ">=", 0.0)}, results=results,
    )  # fmt: skip


def final(arms, tasks) -> dict:
    slug, higher = tasks[0].info.slug, tasks[0].info.higher_is_better
    bests = [b for arm in arms if (b := arm.best(slug, higher)) is not None]
    return {
        "valid_rate": statistics.fmean(arm.valid_rate() for arm in arms),
        "mean_reward": statistics.fmean(arm.mean_reward() for arm in arms),
        "best_score_mean": statistics.fmean(bests) if bests else None,
        "seeds_with_a_valid_submission": len(bests),
        "stages_mean": statistics.fmean(r.stages for arm in arms for r in arm.records),
    }


def instrumenter_share(arms) -> dict[str, float]:
    """The share of an arm's attempts (all seeds) whose program was written by each instrumenter: "ast",
    "lm" (the LM's markers accepted), "lm-fallback" (refused: the AST rules' ran) or "none".

    >>> from types import SimpleNamespace as NS
    >>> instrumenter_share([NS(records=[NS(instrumentation="lm"), NS(instrumentation="lm-fallback")])])
    {'lm': 0.5, 'lm-fallback': 0.5}
    """
    kinds = [r.instrumentation for arm in arms for r in arm.records]
    return {kind: kinds.count(kind) / len(kinds) for kind in sorted(set(kinds))}


def mean_curve(curves: list[list[dict]]) -> list[dict]:
    """The point-wise mean over seeds of curves with the same points (None where no seed had a value)."""
    rows = []
    for points in zip(*curves, strict=True):
        row = {}
        for key in points[0]:
            values = [p[key] for p in points if p[key] is not None]
            row[key] = statistics.fmean(values) if values else None
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
