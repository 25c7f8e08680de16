"""Asynchronous vs synchronous actor–learner: wall-clock and executor utilisation for the same attempt budget.

What runs: the real loop (rl_core.loop.run_loop) and learner (PPO) with a TablePolicy over four families
whose durations all follow one heavy-tailed log-normal (median 1 s, σ = 1, so the mean is 1.65 s and one
attempt in a hundred takes over 10 s), on the discrete-event SimulatedExecutor with 8 workers (no programs
run; the clock is simulated, so learner compute takes no time). Durations do not depend on the family, so
what the policy learns cannot change the timing.

Arms, the same budget of attempts each:
  async  K = 8 attempts in flight; each finished attempt is replaced at once; an update every B results.
  sync   sample B, run them on the 8 workers, wait for all B, update, repeat.
The target comparison is B = K = 8 (a synchronous step waits for the slowest of 8 parallel attempts); rows
with B = 32 and 64 show how queueing more attempts per step dilutes the stragglers.

Reported: wall-clock of each arm, speedup = sync wall / async wall, and utilisation = busy executor-seconds
(the sum of Δt) / (8 workers x wall-clock), mean over seeds.

The simulated clock charges nothing for sampling, instrumenting, grading or learning, so its utilisation is
an upper bound. The second table (unless --no-real) runs both arms for real: the same loop and learner with
the LocalExecutor's 8 sandboxes (bubblewrap where it works) on the bundled iris-species competition, each
program sleeping a log-normal time (median 0.5 s, σ = 1, capped at 20 s) drawn from its attempt id, so both
arms run the same durations. Its wall-clock includes everything the loop does between attempts, and the
end of the budget: once the last attempt is launched, the other sandboxes idle while the stragglers
finish, a fixed cost of a few seconds that a short run (--quick: 64 attempts) shows as lower utilisation.

Run: python bench/async_vs_sync.py [--quick] [--no-real] [--json PATH]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from _common import bundled_tasks, machine_info, print_table, target, write_json

from rl_core.executors import FamilySpec, SimulatedExecutor, paper_reward
from rl_core.learner import Learner, LearnerConfig
from rl_core.loop import LoopConfig, run_loop
from rl_core.policies.table import TablePolicy
from rl_core.policy import TaskInfo

WORKERS = 8
FAMILIES = {
    f"family_{n}": FamilySpec(median_s=1.0, sigma=1.0, score_mean=score, score_std=0.05)
    for n, score in enumerate((0.2, 0.4, 0.6, 0.8))
}
LEARNER = LearnerConfig(objective="ppo", lr=0.01)
TASK = TaskInfo("simulated", "a simulated competition", "accuracy", True, "id", ("y",), 0.0)  # no time limit
BATCHES = (8, 32, 64)


def run_arm(*, sync: bool, batch: int, seed: int, attempts: int) -> dict[str, float]:
    policy = TablePolicy(list(FAMILIES))
    executor = SimulatedExecutor(FAMILIES, WORKERS, seed, reward=paper_reward)
    config = LoopConfig(attempts=attempts, actors=WORKERS, batch=batch, sync=sync, seed=seed)
    learner = Learner(policy, LearnerConfig(**{**asdict(LEARNER), "seed": seed}))
    summary = run_loop(policy=policy, learner=learner, executor=executor, tasks=[TASK], config=config)
    return {"wall_s": summary.wall_s, "utilization": summary.utilization, "updates": summary.updates}


def compare(batch: int, seeds: int, attempts: int) -> dict[str, Any]:
    """Both arms at one batch size, over `seeds` seeds (the same seeds give both arms the same outcomes)."""
    runs = {
        arm: [run_arm(sync=arm == "sync", batch=batch, seed=s, attempts=attempts) for s in range(seeds)]
        for arm in ("async", "sync")
    }
    return summarize(batch, runs) | {
        "updates_async": statistics.fmean(r["updates"] for r in runs["async"]),
        "updates_sync": statistics.fmean(r["updates"] for r in runs["sync"]),
    }


def summarize(batch: int, runs: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    """One table row: mean wall-clock and utilisation of each arm, and the speedup (sync / async) per seed."""
    speedups = [s["wall_s"] / a["wall_s"] for a, s in zip(runs["async"], runs["sync"], strict=True)]
    return {
        "batch": batch,
        "async_wall_s": statistics.fmean(r["wall_s"] for r in runs["async"]),
        "sync_wall_s": statistics.fmean(r["wall_s"] for r in runs["sync"]),
        "speedup": statistics.fmean(speedups),
        "speedup_min": min(speedups),
        "async_utilization": statistics.fmean(r["utilization"] for r in runs["async"]),
        "sync_utilization": statistics.fmean(r["utilization"] for r in runs["sync"]),
    }


REAL_SLUG = "iris-species"
REAL_MEDIAN_S, REAL_CAP_S = 0.5, 20.0


def sleeping_runner(seed: int) -> Any:
    """A LocalExecutor runner that runs, instead of the policy's program, one that sleeps for a log-normal
    time drawn from (seed, attempt id): the same attempt of either arm sleeps as long."""
    from rl_core.environment import run_response

    def run(response: str, task: Any, work_dir: Path, **options: Any) -> Any:
        rng = random.Random(f"{seed}:{work_dir.name}")
        sleep_s = min(rng.lognormvariate(math.log(REAL_MEDIAN_S), 1.0), REAL_CAP_S)
        program = f"Plan: sleep.\n\n```python\nimport time\ntime.sleep({sleep_s:.3f})\n```\n"
        return run_response(program, task, work_dir, **options)

    return run


def run_real_arm(*, sync: bool, seed: int, attempts: int, task: Any, scratch: Path) -> dict[str, float]:
    """One arm with real sandboxed programs on WORKERS sandboxes (B = K = WORKERS)."""
    from rl_core.executors import LocalExecutor

    policy = TablePolicy(list(FAMILIES))
    executor = LocalExecutor({task.info.slug: task.files}, WORKERS, scratch, runner=sleeping_runner(seed))
    config = LoopConfig(attempts=attempts, actors=WORKERS, batch=WORKERS, sync=sync, seed=seed)
    learner = Learner(policy, LearnerConfig(**{**asdict(LEARNER), "seed": seed}))
    try:
        summary = run_loop(
            policy=policy, learner=learner, executor=executor, tasks=[task.info], config=config
        )
    finally:
        executor.close()
    return {"wall_s": summary.wall_s, "utilization": summary.utilization, "busy_s": summary.busy_s}


def compare_real(seeds: int, attempts: int) -> dict[str, Any]:
    """Both arms with real sandboxes, B = K = 8, `seeds` seeds, arms interleaved seed by seed."""
    runs: dict[str, list[dict[str, float]]] = {"async": [], "sync": []}
    with tempfile.TemporaryDirectory(prefix="async-vs-sync-") as tmp:
        [task] = bundled_tasks([REAL_SLUG], Path(tmp))
        for seed in range(seeds):
            for arm in ("async", "sync"):
                scratch = Path(tmp) / f"{arm}-{seed}"
                runs[arm].append(run_real_arm(sync=arm == "sync", seed=seed, attempts=attempts, task=task,
                                              scratch=scratch))  # fmt: skip
    return summarize(WORKERS, runs) | {"busy_s_per_arm": statistics.fmean(r["busy_s"] for r in runs["async"])}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short pass (a few minutes on 2 cores)")
    parser.add_argument("--no-real", action="store_true", help="only the simulated arms")
    parser.add_argument("--json", type=Path, default=None, help="write the results here as JSON")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    seeds, attempts = (5, 2000) if args.quick else (10, 10_000)
    real_seeds, real_attempts = (1, 64) if args.quick else (2, 480)
    started = time.perf_counter()
    rows = [compare(batch, seeds, attempts) for batch in BATCHES]
    title = (
        f"{seeds} seeds x {attempts} attempts per arm on {WORKERS} simulated workers, log-normal durations "
        "(median 1 s, σ = 1): simulated wall-clock (s), speedup = sync / async, "
        "utilisation = busy / available"
    )
    columns = ["batch", "async_wall_s", "sync_wall_s", "speedup", "speedup_min", "async_utilization",
               "sync_utilization", "updates_async", "updates_sync"]  # fmt: skip
    print_table(rows, columns, title=title)
    real = None if args.no_real else compare_real(real_seeds, real_attempts)
    if real is not None:
        real_title = (
            f"[real] {real_seeds} seed(s) x {real_attempts} sandboxed attempts per arm, {WORKERS} sandboxes "
            f"on {REAL_SLUG}, sleeps log-normal (median {REAL_MEDIAN_S} s, σ = 1): wall-clock (s) as measured"
        )
        print_table([real], [*columns[:7], "busy_s_per_arm"], title=real_title)
    primary = rows[0]
    targets = {
        "speedup": target(primary["speedup"], ">=", 1.8),
        "async_utilization": target(primary["async_utilization"], ">=", 0.9),
    }
    if real is not None:
        targets |= {
            "real_speedup": target(real["speedup"], ">=", 1.8),
            "real_async_utilization": target(real["async_utilization"], ">=", 0.9),
        }
    target_rows = [{"target": k, **v} for k, v in targets.items()]
    print_table(target_rows, ["target", "op", "threshold", "measured", "met"], title="targets (B = K = 8)")
    print(f"\n{time.perf_counter() - started:.0f} s of computing")
    write_json(
        args.json,
        benchmark="async_vs_sync",
        machine=machine_info(),
        config={
            "quick": args.quick,
            "seeds": seeds,
            "attempts_per_arm": attempts,
            "workers": WORKERS,
            "actors": WORKERS,
            "durations": "log-normal, median 1 s, sigma 1 (every family)",
            "executor": "SimulatedExecutor",
            "learner": asdict(LEARNER),
            "batches": list(BATCHES),
            "real": None
            if real is None
            else {
                "seeds": real_seeds,
                "attempts_per_arm": real_attempts,
                "competition": REAL_SLUG,
                "executor": "LocalExecutor",
                "sleep": f"log-normal, median {REAL_MEDIAN_S} s, sigma 1",
            },
        },
        targets=targets,
        results={
            "speedup": primary["speedup"],
            "async_utilization": primary["async_utilization"],
            "sync_utilization": primary["sync_utilization"],
            "by_batch": rows,
            "real": real,
        },
    )


if __name__ == "__main__":
    main()
