"""Duration bias: does an asynchronous learner drift to fast, weak programs, and do duration weights undo it?

What runs: the real actor–learner loop (rl_core.loop.run_loop), learner (PPO, rl_core.learner) and a
TablePolicy (one logit per action family), against the discrete-event SimulatedExecutor: no programs run;
each family's durations are log-normal and its outcomes drawn from the table below. The setting is the
paper's (arXiv 2509.01684, DESIGN.md §2): K = 8 asynchronous actors, a finished attempt replaced at once
from the newest policy, solve/improve prompts mixed 50/50, a per-attempt time limit (an attempt over it is
killed: Δt = limit, failure), the `paper` reward preset (-10 for a failure, +0.1 per stage, the raw score
for a valid submission) and raw advantages against a running-mean baseline.

Action families (the policy starts uniform over all eight):
  fast crash (3): crash_import, crash_load, crash_fit - die within about a second, 0, 1 or 3 stages;
  fast but weak (3): logreg, knn, tree - 1-2 s, scores 0.60-0.64;
  medium (1): random_forest - about 30 s, score 0.75;
  slow but strong (1): gbm_tuned - about 5 minutes (some over the 10-minute limit), score 0.90.
Improve prompts keep the earlier solution's family more often (TablePolicy keep_bonus) - improve-chains.

Arms (everything else equal, >= 5 seeds each):
  naive           duration_aware=False, running-mean baseline (raw advantages)
  duration_aware  w_k = Δt_k / mean(Δt), running-mean baseline
  normalized      duration_aware=False, per-batch advantage normalisation (r - mean) / std

Reported per arm: the final probability of the slow strong family, mean Δt over training, best score and
simulated wall-clock; and per family, its launch share against its completion share: over the whole run,
and in the early window (the first 10% of updates) where slow results have not come back yet.
The simulation is not tuned until the targets appear; what it finds is what it prints.

Run: python bench/duration_bias.py [--quick] [--json PATH]
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import asdict, dataclass, replace
from typing import Any

from _common import bench_arguments, machine_info, print_table, target, write_json

from rl_core.executors import FamilySpec, SimulatedExecutor
from rl_core.learner import Learner, LearnerConfig
from rl_core.loop import LoopConfig, run_loop
from rl_core.policies.table import TablePolicy
from rl_core.policy import TaskInfo

FAMILIES: dict[str, FamilySpec] = {
    "crash_import": FamilySpec(median_s=0.3, sigma=0.3, p_crash=1.0, crash_stages=(0,)),
    "crash_load": FamilySpec(median_s=0.6, sigma=0.3, p_crash=1.0, crash_stages=(1,)),
    "crash_fit": FamilySpec(median_s=1.0, sigma=0.3, p_crash=1.0, crash_stages=(3,)),
    "logreg": FamilySpec(median_s=0.8, sigma=0.3, score_mean=0.60, score_std=0.02),
    "knn": FamilySpec(median_s=1.5, sigma=0.3, score_mean=0.62, score_std=0.02),
    "tree": FamilySpec(median_s=2.0, sigma=0.3, score_mean=0.65, score_std=0.02),
    "random_forest": FamilySpec(median_s=30.0, sigma=0.5, score_mean=0.75, score_std=0.02),
    "gbm_tuned": FamilySpec(median_s=300.0, sigma=0.4, score_mean=0.90, score_std=0.02),
}
"""The slow strong family must be the best in expectation, or an unbiased learner should not pick it: with a
-10 failure, a few percent of crashes or timeouts outweigh any score gap, so the valid families never crash
and only the slow family's tail reaches the limit (the table printed shows each family's mean reward)."""
SLOW_STRONG = "gbm_tuned"
ARMS: dict[str, dict[str, Any]] = {
    "naive": {"duration_aware": False, "advantage": "running_mean"},
    "duration_aware": {"duration_aware": True, "advantage": "running_mean"},
    "normalized": {"duration_aware": False, "advantage": "batch_normalized"},
}
LEARNER = LearnerConfig(
    objective="ppo", lr=0.01, clip_eps=0.2, ppo_epochs=2, entropy_coef=0.0, max_grad_norm=1.0
)


@dataclass(frozen=True)
class Condition:
    """The simulated world: what may make slow results scarce or late."""

    name: str
    time_limit_s: float = 900.0  # an attempt over it is killed (Δt = limit, failure)
    keep_bonus: float = 2.0  # improve prompts favour the earlier solution's family (improve-chains)
    improve_prob: float = 0.5
    actors: int = 8
    batch: int = 64


PAPER = Condition("paper")
EXTRA_CONDITIONS = (
    replace(PAPER, name="no_time_limit", time_limit_s=0.0),
    replace(PAPER, name="no_improve_chains", keep_bonus=0.0),
    replace(PAPER, name="solve_only", improve_prob=0.0, keep_bonus=0.0),
)


def paper_reward(valid: bool, score: float | None, stages: int) -> float:
    """The `paper` preset of rl_core.reward: the raw score (higher is better) or -10, plus 0.1 per stage."""
    from rl_core.reward import RewardConfig, compute_reward

    return compute_reward(
        valid=valid, score=score, stages_reached=stages, config=RewardConfig(preset="paper"),
        higher_is_better=True, baseline_score=None, perfect_score=1.0,
    )  # fmt: skip


class FamilyTally:
    """An observer counting launches and completions per family, with their simulated times."""

    def __init__(self, executor: SimulatedExecutor) -> None:
        self.executor = executor
        self.launches: list[tuple[float, str]] = []
        self.completions: list[tuple[float, str, float]] = []
        self.update_times: list[float] = []

    def on_attempt_started(self, attempt_id, sample, started_at) -> None:
        self.launches.append((started_at, sample.info["family"]))

    def on_attempt_finished(self, attempt_id, sample, outcome, finished_at, staleness) -> None:
        self.completions.append((finished_at, sample.info["family"], outcome.duration_s))

    def on_update(self, version, metrics) -> None:
        self.update_times.append(self.executor.now())

    def shares(self, until: float) -> dict[str, dict[str, float]]:
        """Per family: share of launches and of completions up to `until`, and share of busy seconds."""
        launched = Counter(f for t, f in self.launches if t <= until)
        completed = Counter(f for t, f, _ in self.completions if t <= until)
        busy = Counter()
        for t, family, duration_s in self.completions:
            if t <= until:
                busy[family] += duration_s
        n_l, n_c, n_b = sum(launched.values()) or 1, sum(completed.values()) or 1, sum(busy.values()) or 1
        return {
            f: {"launch": launched[f] / n_l, "completion": completed[f] / n_c, "time": busy[f] / n_b}
            for f in FAMILIES
        }


def run_arm(arm: str, condition: Condition, seed: int, attempts: int) -> dict[str, Any]:
    """One training run; returns its end-of-run numbers and its family shares."""
    policy = TablePolicy(list(FAMILIES), keep_bonus=condition.keep_bonus)
    learner = Learner(policy, replace(LEARNER, seed=seed, **ARMS[arm]))
    executor = SimulatedExecutor(FAMILIES, condition.actors, seed, reward=paper_reward)
    tally = FamilyTally(executor)
    task = TaskInfo(
        "simulated", "simulated competition", "accuracy", True, "id", ("y",), condition.time_limit_s
    )
    config = LoopConfig(
        attempts=attempts,
        actors=condition.actors,
        batch=condition.batch,
        improve_prob=condition.improve_prob,
        seed=seed,
    )
    summary = run_loop(
        policy=policy, learner=learner, executor=executor, tasks=[task], config=config, observer=tally
    )
    early = tally.update_times[max(len(tally.update_times) // 10 - 1, 0)] if tally.update_times else 0.0
    return {
        "p_slow_strong": policy.probabilities()[SLOW_STRONG],
        "mean_duration_s": summary.mean_duration_s,
        "best_score": summary.best_score,
        "wall_s": summary.wall_s,
        "updates": summary.updates,
        "staleness_mean": summary.staleness_mean,
        "shares_all": tally.shares(until=float("inf")),
        "shares_early": tally.shares(until=early),
        "early_window_s": early,
    }


def aggregate(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean (and spread) over seeds."""
    p = [r["p_slow_strong"] for r in runs]
    shares = {
        window: {
            f: {k: statistics.fmean(r[window][f][k] for r in runs) for k in ("launch", "completion", "time")}
            for f in FAMILIES
        }
        for window in ("shares_all", "shares_early")
    }
    return {
        "p_slow_strong": statistics.fmean(p),
        "p_slow_strong_min": min(p),
        "p_slow_strong_max": max(p),
        "p_slow_strong_per_seed": p,
        "mean_duration_s": statistics.fmean(r["mean_duration_s"] for r in runs),
        "best_score": statistics.fmean(r["best_score"] for r in runs if r["best_score"] is not None),
        "wall_s": statistics.fmean(r["wall_s"] for r in runs),
        "updates": statistics.fmean(r["updates"] for r in runs),
        "staleness_mean": statistics.fmean(r["staleness_mean"] for r in runs),
        "early_window_s": statistics.fmean(r["early_window_s"] for r in runs),
        **shares,
    }


def run_condition(condition: Condition, seeds: int, attempts: int) -> dict[str, dict[str, Any]]:
    return {
        arm: aggregate([run_arm(arm, condition, seed, attempts) for seed in range(seeds)]) for arm in ARMS
    }


def print_condition(
    condition: Condition, results: dict[str, dict[str, Any]], seeds: int, attempts: int
) -> None:
    rows = [{"arm": arm, **r} for arm, r in results.items()]
    columns = ["arm", "p_slow_strong", "p_slow_strong_min", "p_slow_strong_max", "mean_duration_s", "best_score",
               "wall_s", "updates", "staleness_mean"]  # fmt: skip
    print_table(rows, columns, title=f"[{condition.name}] {seeds} seeds x {attempts} attempts per arm: "
                f"final P({SLOW_STRONG}), mean Δt (s), best score, simulated wall-clock (s)")  # fmt: skip
    share_rows = []
    for family in FAMILIES:
        row: dict[str, Any] = {"family": family, "median_s": FAMILIES[family].median_s}
        for arm, r in results.items():
            early = r["shares_early"][family]
            row[f"{arm}:launch_early"] = early["launch"]
            row[f"{arm}:done_early"] = early["completion"]
            row[f"{arm}:launch_all"] = r["shares_all"][family]["launch"]
        share_rows.append(row)
    share_columns = ["family", "median_s"] + [
        f"{a}:{k}" for a in ARMS for k in ("launch_early", "done_early", "launch_all")
    ]
    print_table(share_rows, share_columns, title=f"[{condition.name}] launch vs completion share per family "
                "(early = up to the 10th-percentile update; all = the whole run, where completions = launches)")  # fmt: skip


def sandboxed_grammar_results(quick: bool) -> dict[str, Any] | None:
    """Hook for the second half of the benchmark: real sandboxed GrammarPolicy programs.

    To be filled in: train the GrammarPolicy on a bundled competition through rl_core.executors.LocalExecutor
    with the naive and duration_aware arms and return, per arm, mean Δt and best score over training.
    Returns None until then (the JSON then has no "sandboxed" section).
    """
    return None


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0])
    seeds, attempts = (5, 4000) if args.quick else (10, 12000)
    conditions = (PAPER,) if args.quick else (PAPER, *EXTRA_CONDITIONS)
    started = time.perf_counter()
    results: dict[str, Any] = {}
    for condition in conditions:
        results[condition.name] = run_condition(condition, seeds, attempts)
        print_condition(condition, results[condition.name], seeds, attempts)
    paper = results[PAPER.name]
    targets = {
        "duration_aware_p_slow_strong": target(paper["duration_aware"]["p_slow_strong"], ">=", 0.8),
        "naive_p_slow_strong": target(paper["naive"]["p_slow_strong"], "<=", 0.5),
    }
    print_table([{"target": k, **v} for k, v in targets.items()], ["target", "op", "threshold", "measured", "met"],
                title="targets (paper condition)")  # fmt: skip
    sandboxed = sandboxed_grammar_results(args.quick)
    document = {**paper, "conditions": results, **({"sandboxed": sandboxed} if sandboxed else {})}
    print(
        f"\n{time.perf_counter() - started:.0f} s of computing for {len(conditions) * len(ARMS) * seeds} runs"
    )
    write_json(
        args.json,
        benchmark="duration_bias",
        machine=machine_info(),
        config={
            "quick": args.quick, "seeds": seeds, "attempts_per_run": attempts, "executor": "SimulatedExecutor",
            "families": {f: asdict(s) for f, s in FAMILIES.items()}, "slow_strong": SLOW_STRONG,
            "conditions": [asdict(c) for c in conditions], "arms": ARMS, "learner": asdict(LEARNER),
            "reward": "rl_core.reward.compute_reward, preset paper",
        },
        targets=targets,
        results=document,
    )  # fmt: skip


if __name__ == "__main__":
    main()
