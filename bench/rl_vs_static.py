"""The paper's central comparison in small: the same small LM with RL against itself without updates.

What runs: SmolLM2-135M-Instruct, warm-started on GrammarPolicy demonstrations (bench/_lm.py, the same
cached warm start as bench/lm_valid_rate.py), on two bundled competitions. Two arms with the same attempt
budget, seeds and loop (synchronous, B = 8, solve/improve mix, sandboxed and graded):
  static  no updates: the model's best of N samples (the "static model" of the paper, in small);
  rl      PPO updates every batch (duration-aware weights, running-mean baseline, LoRA).
The paper (arXiv 2509.01684) compares a 3B model with RL against much larger static models with a
scaffold, over days on 8 GPUs; this is the same question for a 135M model over minutes on 2 CPU cores,
so it shows the mechanism, not the paper's margin.

Reported: for each arm and seed, the valid-submission rate and each competition's best score against
attempts (a curve), and at the end; the RL arm's mean over seeds against the static arm's.

Run: python bench/rl_vs_static.py [--quick] [--json PATH]   (measured quick: 56 minutes on 2 cores,
24 of them the shared warm start when not cached; full, 2 seeds x 48 attempts, about 4 x the arms' 32)
"""

from __future__ import annotations

import statistics

from _common import bench_arguments, machine_info, print_table, target, write_json
from _lm import LMSettings, curve, lm_policy, run_arm, tasks_for, warm_start

SLUGS = ("diabetes-progression", "breast-cancer-diagnosis")


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0])
    attempts, seeds = (24, (0,)) if args.quick else (48, (0, 1))
    settings = LMSettings()
    tasks = tasks_for(SLUGS)
    adapter, _ = warm_start(tasks, settings)
    points = list(range(settings.batch, attempts + 1, settings.batch))
    runs: dict[str, list] = {"static": [], "rl": []}
    for seed in seeds:
        for name in runs:
            policy = lm_policy(settings, adapter=adapter, seed=seed)
            arm = run_arm(name, policy, tasks, settings, attempts=attempts, learn=name == "rl", seed=seed)
            runs[name].append(arm)
            rows = curve(arm, tasks, points)
            print_table(rows, list(rows[0]), title=f"{name}, seed {seed}: against attempts")
    results = {name: aggregate(arms, tasks) for name, arms in runs.items()}
    results["curves"] = {name: [curve(arm, tasks, points) for arm in arms] for name, arms in runs.items()}
    final = [{"arm": name, **{k: v for k, v in results[name].items() if not isinstance(v, dict)},
              **{f"best:{s}": results[name]["best_score"][s] for s in SLUGS}} for name in runs]  # fmt: skip
    print_table(final, list(final[0]), title=f"At {attempts} attempts (mean over seeds {seeds})")
    valid_gap = results["rl"]["valid_rate"] - results["static"]["valid_rate"]
    targets = {f"rl_best_vs_static:{t.info.slug}": gap_target(results, t) for t in tasks}
    targets["rl_valid_rate_minus_static"] = target(valid_gap, ">=", 0.0)
    write_json(
        args.json, benchmark="rl_vs_static", machine=machine_info(),
        config={"slugs": SLUGS, "attempts": attempts, "seeds": seeds, **vars(settings)},
        targets=targets, results=results,
    )  # fmt: skip


def aggregate(arms, tasks) -> dict:
    """Means over seeds: valid rate, mean reward, each task's best score (None if no seed had one)."""
    best = {}
    for t in tasks:
        scores = [b for arm in arms if (b := arm.best(t.info.slug, t.info.higher_is_better)) is not None]
        best[t.info.slug] = statistics.fmean(scores) if scores else None
    return {
        "valid_rate": statistics.fmean(arm.valid_rate() for arm in arms),
        "mean_reward": statistics.fmean(arm.mean_reward() for arm in arms),
        "updates": statistics.fmean(arm.updates for arm in arms),
        "seconds_per_attempt": statistics.fmean(arm.wall_s / len(arm.records) for arm in arms),
        "best_score": best,
    }


def gap_target(results: dict, task) -> dict:
    slug, sign = task.info.slug, 1.0 if task.info.higher_is_better else -1.0
    rl, static = results["rl"]["best_score"][slug], results["static"]["best_score"][slug]
    gap = float("-inf") if rl is None else (float("inf") if static is None else sign * (rl - static))
    return target(gap, ">=", 0.0) | {"rl": rl, "static": static}


if __name__ == "__main__":
    main()
