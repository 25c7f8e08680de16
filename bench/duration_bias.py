"""Duration bias: does an asynchronous learner drift to fast, weak programs, and do duration weights undo it?

What runs: the real actor–learner loop (rl_core.loop.run_loop), learner (PPO, rl_core.learner) and a
TablePolicy (one logit per action family), against the discrete-event SimulatedExecutor: no programs run;
each family's durations are log-normal and its outcomes drawn from the table below. The setting is the
paper's (arXiv 2509.01684, DESIGN.md §2): K = 8 asynchronous actors, a finished attempt replaced at once
from the newest policy, an update every B = 64 results, solve/improve prompts mixed 50/50, a per-attempt
time limit (an attempt over it is killed: Δt = limit, failure), rl_core.reward's `paper` preset (-10 for a
failure, +0.1 per stage, the raw score for a valid submission) and raw advantages (running-mean baseline).

Action families (the policy starts uniform over all eight):
  fast crash (3): crash_import, crash_load, crash_fit - die within about a second, at 0, 1 or 3 stages;
  fast but weak (3): logreg, knn, tree - 1-2 s, scores 0.60-0.65;
  medium (1): random_forest - about 30 s, score 0.75;
  slow but strong (1): gbm_tuned - about 5 minutes (a few over the 15-minute limit), score 0.90.
Improve prompts favour the earlier solution's family (TablePolicy keep_bonus): improve-chains.

Arms (everything else equal, >= 5 seeds each):
  naive           duration_aware=False, running-mean baseline (raw advantages)
  duration_aware  w_k = Δt_k / mean(Δt), running-mean baseline
  normalized      duration_aware=False, per-batch advantage normalisation (r - mean) / std

Reported per arm: the final probability of the slow strong family (and after 25/50/75% of the attempts),
the most probable family, mean Δt over training, best score and simulated wall-clock. Per family: its mean
reward in this world, and its share of launches against its share of completions in the first 300 s (before
any slow result can be back) and over the whole run. `--all-conditions` (and full mode) also runs worlds
without the time limit, without improve-chains, with solve prompts only, and one where the slow family is
risky (10% crashes, a 10-minute limit) and so worse on average than the fast ones.
The simulation is not tuned until the targets appear; what it finds is what it prints.

Second half (unless --no-sandboxed): the naive and duration-aware arms once more with real sandboxed programs
from the GrammarPolicy (rl_core.executors.LocalExecutor, 2 sandboxes) on the bundled digits-recognition
competition, paper reward: mean Δt over training (overall and per half), best score, the family the policy
ends on. One seed, a few dozen attempts: it shows what the weights do to real durations, not a significance.

Run: python bench/duration_bias.py [--quick] [--all-conditions] [--no-sandboxed] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from _common import machine_info, print_table, target, write_json

from rl_core.executors import FamilySpec, Job, SimulatedExecutor, paper_reward
from rl_core.learner import Learner, LearnerConfig
from rl_core.loop import LoopConfig, run_loop
from rl_core.policies.table import TablePolicy, render_program
from rl_core.policy import Prompt, Sample, TaskInfo

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
and only the slow family's tail reaches the limit (the family table prints each family's mean reward)."""
SLOW_STRONG = "gbm_tuned"
ARMS: dict[str, dict[str, Any]] = {
    "naive": {"duration_aware": False, "advantage": "running_mean"},
    "duration_aware": {"duration_aware": True, "advantage": "running_mean"},
    "normalized": {"duration_aware": False, "advantage": "batch_normalized"},
}
LEARNER = LearnerConfig(
    objective="ppo", lr=0.01, clip_eps=0.2, ppo_epochs=2, entropy_coef=0.0, max_grad_norm=1.0
)
CURVE_POINTS = (0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class Condition:
    """The simulated world: what may make slow results scarce, late or costly."""

    name: str
    time_limit_s: float = 900.0  # an attempt over it is killed (Δt = limit, failure); 0 = no limit
    keep_bonus: float = 2.0  # improve prompts favour the earlier solution's family (improve-chains)
    improve_prob: float = 0.5
    actors: int = 8
    batch: int = 64
    changes: dict[str, FamilySpec] = field(default_factory=dict)  # families that differ from FAMILIES

    @property
    def families(self) -> dict[str, FamilySpec]:
        return FAMILIES | self.changes


PAPER = Condition("paper")
EXTRA_CONDITIONS = (
    replace(PAPER, name="no_time_limit", time_limit_s=0.0),
    replace(PAPER, name="no_improve_chains", keep_bonus=0.0),
    replace(PAPER, name="solve_only", improve_prob=0.0, keep_bonus=0.0),
    replace(  # slow but risky: 10% crashes and a 10-minute limit make it worse than fast programs on average
        PAPER,
        name="slow_but_risky",
        time_limit_s=600.0,
        changes={SLOW_STRONG: replace(FAMILIES[SLOW_STRONG], sigma=0.5, p_crash=0.1, crash_stages=(3, 4))},
    ),
)


def simulated_task(condition: Condition) -> TaskInfo:
    return TaskInfo(
        "simulated", "a simulated competition", "accuracy", True, "id", ("y",), condition.time_limit_s
    )


def mean_rewards(condition: Condition, draws: int = 2000) -> dict[str, float]:
    """Each family's expected reward in this world, by drawing `draws` simulated attempts of it."""
    executor = SimulatedExecutor(condition.families, 1, seed=10_000, reward=paper_reward)
    prompt = Prompt(task=simulated_task(condition), kind="solve")
    means = {}
    for family in condition.families:
        sample = Sample(prompt, render_program(family), (0.0,), 0, {"family": family})
        outcomes = [executor.outcome_for(Job(f"mc-{n}", sample, "simulated")) for n in range(draws)]
        means[family] = statistics.fmean(o.reward for o in outcomes)
    return means


class Tally:
    """An observer: launches and completions per family with their simulated times, and P(slow strong)."""

    def __init__(self, executor: SimulatedExecutor, policy: TablePolicy, attempts: int) -> None:
        self.executor, self.policy, self.attempts = executor, policy, attempts
        self.launches: list[tuple[float, str]] = []
        self.completions: list[tuple[float, str]] = []
        self.curve: dict[float, float] = {}

    def on_attempt_started(self, attempt_id, sample, started_at) -> None:
        self.launches.append((started_at, sample.info["family"]))

    def on_attempt_finished(self, attempt_id, sample, outcome, finished_at, staleness) -> None:
        self.completions.append((finished_at, sample.info["family"]))

    def on_update(self, version, metrics) -> None:
        done = len(self.completions) / self.attempts
        for point in CURVE_POINTS:
            if point not in self.curve and done >= point - 1e-9:
                self.curve[point] = self.policy.probabilities()[SLOW_STRONG]

    def shares(self, until: float) -> dict[str, dict[str, float]]:
        """Per family: its share of the attempts launched, and of those finished, up to time `until`."""
        launched = Counter(f for t, f in self.launches if t <= until)
        completed = Counter(f for t, f in self.completions if t <= until)
        n_launched, n_completed = max(sum(launched.values()), 1), max(sum(completed.values()), 1)
        return {
            f: {"launch": launched[f] / n_launched, "completion": completed[f] / n_completed}
            for f in launched
        }


def run_arm(arm: str, condition: Condition, seed: int, attempts: int) -> dict[str, Any]:
    """One training run: its end-of-run numbers, its learning curve and its family shares."""
    policy = TablePolicy(list(condition.families), keep_bonus=condition.keep_bonus)
    learner = Learner(policy, replace(LEARNER, seed=seed, **ARMS[arm]))
    executor = SimulatedExecutor(condition.families, condition.actors, seed, reward=paper_reward)
    tally = Tally(executor, policy, attempts)
    config = LoopConfig(
        attempts=attempts,
        actors=condition.actors,
        batch=condition.batch,
        improve_prob=condition.improve_prob,
        seed=seed,
    )
    summary = run_loop(
        policy=policy,
        learner=learner,
        executor=executor,
        tasks=[simulated_task(condition)],
        config=config,
        observer=tally,
    )
    probabilities = policy.probabilities()
    return {
        "p_slow_strong": probabilities[SLOW_STRONG],
        "top_family": max(probabilities, key=probabilities.__getitem__),
        "mean_duration_s": summary.mean_duration_s,
        "best_score": summary.best_score,
        "wall_s": summary.wall_s,
        "updates": summary.updates,
        "staleness_mean": summary.staleness_mean,
        "curve": tally.curve,
        "shares_early": tally.shares(until=condition.families[SLOW_STRONG].median_s),
        "shares_all": tally.shares(until=float("inf")),
    }


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def aggregate(runs: list[dict[str, Any]], families: dict[str, FamilySpec]) -> dict[str, Any]:
    """Means (and the spread of P(slow strong)) over seeds."""
    p = [r["p_slow_strong"] for r in runs]
    shares = {
        window: {
            f: {k: _mean([r[window].get(f, {}).get(k, 0.0) for r in runs]) for k in ("launch", "completion")}
            for f in families
        }
        for window in ("shares_early", "shares_all")
    }
    return {
        "p_slow_strong": _mean(p),
        "p_slow_strong_min": min(p),
        "p_slow_strong_max": max(p),
        "p_slow_strong_per_seed": p,
        "top_family_per_seed": [r["top_family"] for r in runs],
        "curve": {
            str(point): _mean([r["curve"].get(point, float("nan")) for r in runs]) for point in CURVE_POINTS
        },
        "mean_duration_s": _mean([r["mean_duration_s"] for r in runs]),
        "best_score": _mean([r["best_score"] for r in runs if r["best_score"] is not None]),
        "wall_s": _mean([r["wall_s"] for r in runs]),
        "updates": _mean([r["updates"] for r in runs]),
        "staleness_mean": _mean([r["staleness_mean"] for r in runs]),
        **shares,
    }


def run_condition(condition: Condition, seeds: int, attempts: int) -> dict[str, Any]:
    arms = {
        arm: aggregate([run_arm(arm, condition, seed, attempts) for seed in range(seeds)], condition.families)
        for arm in ARMS
    }
    return {"arms": arms, "mean_reward_per_family": mean_rewards(condition)}


def print_condition(condition: Condition, result: dict[str, Any], seeds: int, attempts: int) -> None:
    arms, rewards = result["arms"], result["mean_reward_per_family"]
    rows = [
        {
            "arm": arm,
            **r,
            **{f"P@{int(float(k) * 100)}%": v for k, v in r["curve"].items()},
            "top_family": Counter(r["top_family_per_seed"]).most_common(1)[0][0],
        }
        for arm, r in arms.items()
    ]
    columns = [
        "arm",
        "p_slow_strong",
        "p_slow_strong_min",
        "p_slow_strong_max",
        "P@25%",
        "P@50%",
        "P@75%",
        "top_family",
        "mean_duration_s",
        "best_score",
        "wall_s",
        "updates",
    ]
    title = (
        f"[{condition.name}] {seeds} seeds x {attempts} attempts per arm, K = {condition.actors}, "
        f"B = {condition.batch}: final P({SLOW_STRONG}) (min, max over seeds), P after 25/50/75% of the "
        "attempts, mean Δt (s), best score, simulated wall-clock (s)"
    )
    print_table(rows, columns, title=title)
    early = condition.families[SLOW_STRONG].median_s
    family_rows = []
    for family, spec in condition.families.items():
        row: dict[str, Any] = {"family": family, "median_s": spec.median_s, "mean_reward": rewards[family]}
        for arm in arms:
            row[f"{arm}:launched<{early:.0f}s"] = arms[arm]["shares_early"][family]["launch"]
            row[f"{arm}:done<{early:.0f}s"] = arms[arm]["shares_early"][family]["completion"]
            row[f"{arm}:all"] = arms[arm]["shares_all"][family]["launch"]
        family_rows.append(row)
    title = (
        f"[{condition.name}] per family: mean reward, and its share of launches vs completions in the first "
        f"{early:.0f} s (the slow family's median Δt) and over the whole run (all = launch share; every "
        "launched attempt completes, so over the whole run the two shares are equal)"
    )
    print_table(family_rows, list(family_rows[0]), title=title)


SANDBOXED_SLUG = "digits-recognition"
"""The bundled competition of the sandboxed half: 1,797 8x8 digit images, where the grammar's families range
from a fraction of a second (kNN, linear) to many seconds (boosting, MLPs), so durations really differ."""
SANDBOXED_ARMS = ("naive", "duration_aware")


class SandboxedTally:
    """Per attempt of a sandboxed run: its order, family, Δt and score."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def on_attempt_started(self, attempt_id: str, sample: Sample, started_at: float) -> None:
        pass

    def on_attempt_finished(self, attempt_id, sample, outcome, finished_at, staleness) -> None:
        family = sample.info.get("family", "?")
        self.rows.append({"family": family, "duration_s": outcome.duration_s, "score": outcome.score})

    def on_update(self, version: int, metrics: dict[str, float]) -> None:
        pass

    def mean_duration(self, start: float, end: float) -> float:
        """Mean Δt of the attempts between fractions `start` and `end` of the run, in finishing order."""
        rows = self.rows[int(start * len(self.rows)) : int(end * len(self.rows))]
        return _mean([r["duration_s"] for r in rows])


def run_sandboxed_arm(arm: str, task: Any, attempts: int, scratch: Path) -> dict[str, Any]:
    """Train a GrammarPolicy on real sandboxed programs (LocalExecutor, paper reward) with `arm`'s learner."""
    from rl_core.executors import LocalExecutor
    from rl_core.policies.grammar import GrammarPolicy
    from rl_core.reward import RewardConfig

    torch.manual_seed(0)
    policy = GrammarPolicy()
    learner = Learner(policy, replace(LEARNER, lr=0.05, seed=0, **ARMS[arm]))
    executor = LocalExecutor(
        {task.info.slug: task.files}, capacity=2, scratch_root=scratch, reward=RewardConfig(preset="paper")
    )
    tally = SandboxedTally()
    try:
        summary = run_loop(
            policy=policy, learner=learner, executor=executor, tasks=[task.info], observer=tally,
            config=LoopConfig(attempts=attempts, actors=2, batch=8, seed=0),
        )  # fmt: skip
    finally:
        executor.close()
    families = policy.probabilities("family", task.info.features)
    return {
        "mean_duration_s": summary.mean_duration_s,
        "mean_duration_s_first_half": tally.mean_duration(0.0, 0.5),
        "mean_duration_s_second_half": tally.mean_duration(0.5, 1.0),
        "best_score": summary.best_score,
        "valid_rate": summary.valid_rate,
        "wall_s": summary.wall_s,
        "top_family": max(families, key=families.__getitem__),
        "p_top_family": max(families.values()),
        "family_probabilities": families,
        "attempts": tally.rows,
    }


def sandboxed_grammar_results(quick: bool) -> dict[str, Any]:
    """The second half of the benchmark: the naive and duration-aware arms on real sandboxed GrammarPolicy
    programs for one bundled competition, with 2 sandboxes in flight (this machine's 2 cores)."""
    import tempfile

    from _common import bundled_tasks

    attempts = 48 if quick else 128
    with tempfile.TemporaryDirectory(prefix="duration-bias-") as tmp:
        [task] = bundled_tasks([SANDBOXED_SLUG], Path(tmp))
        arms = {arm: run_sandboxed_arm(arm, task, attempts, Path(tmp) / arm) for arm in SANDBOXED_ARMS}
    rows = [
        {"arm": arm, **{k: v for k, v in r.items() if not isinstance(v, dict | list)}}
        for arm, r in arms.items()
    ]
    columns = ["arm", "mean_duration_s", "mean_duration_s_first_half", "mean_duration_s_second_half",
               "best_score", "valid_rate", "top_family", "p_top_family", "wall_s"]  # fmt: skip
    title = (
        f"[sandboxed] GrammarPolicy on {SANDBOXED_SLUG}, {attempts} real sandboxed attempts per arm, K = 2, "
        "B = 8, paper reward: mean Δt (s) overall and in each half of training, best accuracy, wall-clock (s)"
    )
    print_table(rows, columns, title=title)
    return {"competition": SANDBOXED_SLUG, "attempts_per_arm": attempts, "arms": arms}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 seeds x 10,000 attempts, the paper condition")
    parser.add_argument("--json", type=Path, default=None, help="write the results here as JSON")
    parser.add_argument(
        "--all-conditions", action="store_true", help="also the ablated worlds (full mode does)"
    )
    parser.add_argument("--no-sandboxed", action="store_true", help="skip the real sandboxed programs")
    parser.add_argument("--seeds", type=int, default=None, help="override the number of seeds")
    parser.add_argument("--attempts", type=int, default=None, help="override the attempts per run")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    seeds, attempts = (5, 10_000) if args.quick else (10, 20_000)
    seeds, attempts = args.seeds or seeds, args.attempts or attempts
    conditions = (PAPER, *EXTRA_CONDITIONS) if args.all_conditions or not args.quick else (PAPER,)
    started = time.perf_counter()
    results: dict[str, Any] = {}
    for condition in conditions:
        results[condition.name] = run_condition(condition, seeds, attempts)
        print_condition(condition, results[condition.name], seeds, attempts)
    paper = results[PAPER.name]["arms"]
    targets = {
        "duration_aware_p_slow_strong": target(paper["duration_aware"]["p_slow_strong"], ">=", 0.8),
        "naive_p_slow_strong": target(paper["naive"]["p_slow_strong"], "<=", 0.5),
    }
    target_rows = [{"target": k, **v} for k, v in targets.items()]
    print_table(
        target_rows, ["target", "op", "threshold", "measured", "met"], title="targets (paper condition)"
    )
    sandboxed = None if args.no_sandboxed else sandboxed_grammar_results(args.quick)
    print(
        f"\n{time.perf_counter() - started:.0f} s of computing for {len(conditions) * len(ARMS) * seeds} runs"
    )
    write_json(
        args.json,
        benchmark="duration_bias",
        machine=machine_info(),
        config={
            "quick": args.quick,
            "seeds": seeds,
            "attempts_per_run": attempts,
            "executor": "SimulatedExecutor",
            "families": {f: asdict(s) for f, s in FAMILIES.items()},
            "slow_strong": SLOW_STRONG,
            "conditions": [asdict(c) for c in conditions],
            "arms": ARMS,
            "learner": asdict(LEARNER),
            "reward": "rl_core.reward.compute_reward, preset paper",
        },
        targets=targets,
        results={**paper, "conditions": results, **({"sandboxed": sandboxed} if sandboxed else {})},
    )


if __name__ == "__main__":
    main()
