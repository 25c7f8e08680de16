"""Can the grammar policy attempt competitions that are not two CSV tables? One real run per data kind.

What runs: for each bundled competition of a new data kind (digit-images: PNG files; house-sale-records:
nested JSON records; help-page-subjects: text spans graded by word-level Jaccard), a fresh GrammarPolicy
trained by the real actor–learner loop (rl_core.loop.run_loop, PPO, lr 0.05, paper reward, B = 8,
solve/improve mix) on the LocalExecutor with 2 sandboxes (bubblewrap where it works): every attempt is a
rendered program, instrumented, run sandboxed and graded against the hidden answers.

Reported per competition: attempts, the valid-submission rate, the best score, the sample submission's
score (the bundle's baseline), whether the best beats it, the families tried and the wall-clock.
Targets: valid submissions (rate > 0) and a best score better than the sample submission's.

Run: python bench/competition_kinds.py [--quick] [--json PATH]   (32 attempts per competition; --quick 16)
"""

from __future__ import annotations

import collections
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from _common import bench_arguments, bundled_tasks, machine_info, print_table, target, write_json

from rl_core.executors import LocalExecutor
from rl_core.learner import Learner, LearnerConfig
from rl_core.loop import LoopConfig, run_loop
from rl_core.metrics import is_better
from rl_core.policies.grammar import GrammarPolicy
from rl_core.reward import RewardConfig

SLUGS = {"digit-images": "images", "house-sale-records": "JSON records", "help-page-subjects": "text spans"}
LEARNER = LearnerConfig(objective="ppo", lr=0.05)
ACTORS, BATCH = 2, 8


class Families:
    """An observer that counts the families of finished attempts, and how many were valid."""

    def __init__(self) -> None:
        self.tried: collections.Counter = collections.Counter()
        self.valid: collections.Counter = collections.Counter()

    def on_attempt_started(self, attempt_id, sample, started_at) -> None:
        pass

    def on_attempt_finished(self, attempt_id, sample, outcome, finished_at, staleness) -> None:
        family = sample.info.get("family", "?")
        self.tried[family] += 1
        self.valid[family] += int(bool(outcome.valid))

    def on_update(self, version, metrics) -> None:
        pass


def run_kind(task: Any, attempts: int, scratch: Path) -> dict[str, Any]:
    """One grammar run of `attempts` on one bundled competition; its facts for the table."""
    torch.manual_seed(0)
    policy = GrammarPolicy()
    learner = Learner(policy, replace(LEARNER, seed=0))
    executor = LocalExecutor(
        {task.info.slug: task.files},
        capacity=ACTORS,
        scratch_root=scratch,
        reward=RewardConfig(preset="paper"),
    )
    families, started = Families(), time.perf_counter()
    try:
        summary = run_loop(
            policy=policy, learner=learner, executor=executor, tasks=[task.info], observer=families,
            config=LoopConfig(attempts=attempts, actors=ACTORS, batch=BATCH, seed=0),
        )  # fmt: skip
    finally:
        executor.close()
    best = summary.best_by_task.get(task.info.slug)
    sample = task.files.baseline_score
    best_score = best.score if best else None
    beats = best_score is not None and is_better(
        best_score, sample, higher_is_better=task.info.higher_is_better
    )
    return {
        "competition": task.info.slug,
        "kind": SLUGS[task.info.slug],
        "metric": task.info.metric,
        "attempts": summary.attempts,
        "valid_rate": summary.valid_rate,
        "best_score": best_score,
        "sample_score": sample,
        "beats_sample": beats,
        "wall_s": time.perf_counter() - started,
        "families": {f: f"{families.valid[f]}/{n}" for f, n in sorted(families.tried.items())},
    }


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0])
    attempts = 16 if args.quick else 32
    with tempfile.TemporaryDirectory(prefix="competition-kinds-") as tmp:
        tasks = bundled_tasks(list(SLUGS), Path(tmp))
        rows = [run_kind(task, attempts, Path(tmp) / task.info.slug) for task in tasks]
    columns = ["competition", "kind", "metric", "attempts", "valid_rate", "best_score", "sample_score",
               "beats_sample", "wall_s"]  # fmt: skip
    print_table(
        rows, columns, title=f"GrammarPolicy, {attempts} sandboxed attempts per competition, K = 2, B = 8"
    )
    for row in rows:
        print(f"{row['competition']}: valid/tried per family {row['families']}")
    targets = {}
    for row in rows:
        targets[f"valid_rate:{row['competition']}"] = target(row["valid_rate"], ">", 0.0)
        targets[f"beats_sample:{row['competition']}"] = target(float(row["beats_sample"]), ">=", 1.0)
    write_json(
        args.json, benchmark="competition_kinds", machine=machine_info(),
        config={"attempts": attempts, "actors": ACTORS, "batch": BATCH, "learner": "ppo, lr 0.05",
                "slugs": list(SLUGS)},
        targets=targets, results={"rows": rows},
    )  # fmt: skip


if __name__ == "__main__":
    main()
