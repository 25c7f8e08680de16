"""Does the embedded LM write valid programs on a CPU? The raw model, after a warm start, and after RL.

What runs: SmolLM2-135M-Instruct (the embedded model, DESIGN.md §3) as an LMPolicy on two bundled
competitions, three arms with the same attempt budget through the real loop (bench/_lm.py: synchronous,
B = 8, solve/improve mix, improve pools seeded with the simplest grammar program, sandboxed and graded):
  raw   the model with fresh (zero) LoRA adapters, no updates;
  warm  after the warm start (supervised fine-tuning on GrammarPolicy demonstrations), no updates;
  rl    from the same warm start, PPO updates every batch (duration-aware, running-mean baseline).

Reported per arm: valid-submission rate (overall and per competition), best score per competition, mean
reward, generation speed (tokens/s) and seconds per attempt. Targets: the warm-started valid rate >= 0.5,
and RL's best score >= the warm-started model's best of N at equal attempts, on each competition.

Run: python bench/lm_valid_rate.py [--quick] [--json PATH]   (about 20 minutes quick, 60 full, 2 cores)
"""

from __future__ import annotations

from _common import bench_arguments, machine_info, print_table, target, write_json
from _lm import LMSettings, lm_policy, run_arm, tasks_for, warm_start

SLUGS = ("diabetes-progression", "breast-cancer-diagnosis")


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0])
    attempts = 16 if args.quick else 48
    settings = LMSettings()
    tasks = tasks_for(SLUGS)
    adapter, manifest = warm_start(tasks, settings)
    starts = {"raw": (None, False), "warm": (adapter, False), "rl": (adapter, True)}
    arms = {
        name: run_arm(
            name, lm_policy(settings, adapter=start), tasks, settings, attempts=attempts, learn=learn
        )
        for name, (start, learn) in starts.items()
    }
    results = {name: arm.summary(tasks) for name, arm in arms.items()}
    rows = [{"arm": name, **summary, **flatten(summary, tasks)} for name, summary in results.items()]
    columns = ["arm", "attempts", "valid_rate", "mean_reward", *[f"best:{s}" for s in SLUGS],
               "tokens_per_s", "seconds_per_attempt", "updates"]  # fmt: skip
    print_table(rows, columns, title=f"SmolLM2-135M on {', '.join(SLUGS)}, {attempts} attempts per arm")
    sft = {
        k: manifest.get(k)
        for k in ("demonstrations", "skipped", "steps", "loss_first", "loss_last", "wall_s")
    }
    print(f"warm start: {sft}")
    targets = {"warm_valid_rate": target(results["warm"]["valid_rate"], ">=", 0.5)}
    for t in tasks:
        targets[f"rl_best_vs_warm:{t.info.slug}"] = best_target(results, t)
    write_json(
        args.json, benchmark="lm_valid_rate", machine=machine_info(),
        config={"slugs": SLUGS, "attempts": attempts, **vars(settings)}, targets=targets,
        results={**results, "warm_start": sft},
    )  # fmt: skip


def flatten(summary: dict, tasks) -> dict:
    return {f"best:{t.info.slug}": summary["best_score"][t.info.slug] for t in tasks}


def best_target(results: dict, task) -> dict:
    """RL's best >= the warm start's best, in the metric's direction (a missing score counts as worst)."""
    slug, higher = task.info.slug, task.info.higher_is_better
    rl, warm = results["rl"]["best_score"][slug], results["warm"]["best_score"][slug]
    sign = 1.0 if higher else -1.0
    gap = float("-inf") if rl is None else (float("inf") if warm is None else sign * (rl - warm))
    return target(gap, ">=", 0.0) | {"rl": rl, "warm": warm}


if __name__ == "__main__":
    main()
