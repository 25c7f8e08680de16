"""Duration bias: when does an asynchronous learner over-sample fast programs, and which weights undo it?

What runs: the real actor–learner loop (rl_core.loop.run_loop), learner (PPO, rl_core.learner) and a
TablePolicy (one logit per action family), against the discrete-event SimulatedExecutor: no programs run;
each family's durations are log-normal and its outcomes drawn from the table below. Eight actors, an update
every 64 results, solve/improve prompts 50/50 (except in `persistent`), improve prompts that favour the
earlier solution's family (TablePolicy keep_bonus: improve-chains), a per-attempt time limit (over it:
killed, Δt = limit, failure), rl_core.reward's `paper` preset (-10 a failure, +0.1 a stage, the raw score
when valid), raw advantages.

Action families (the policy starts uniform over all eight):
  fast crash (3): crash_import, crash_load, crash_fit - die within about a second, at 0, 1 or 3 stages;
  fast but weak (3): logreg, knn, tree - 1-2 s, scores 0.60-0.65;
  medium (1): random_forest - about 30 s, score 0.75;
  slow (1): gbm_tuned - about 5 minutes (a few over the 15-minute limit).
Worlds: `paper` (the slow family scores 0.90: the best), `mediocre_slow` (it scores 0.62 and never crashes:
worse than random_forest), `risky_slow` (0.90 but 10% crashes and a 10-minute limit: worse on average), and
`persistent`: the paper's own story, sub-second logistic regression against the 5-minute GBM (the best) and
nothing else, where every prompt after a slot's first is an improve prompt and an improve keeps its family
with probability e^5 / (e^5 + 1) = 0.993 at the start. A lineage then keeps its family for about 150 attempts:
a GBM lineage for longer than the run, a logistic one for a couple of minutes. Lineages persist from a cold
start, the one case where slots over-sample fast programs (rl_core.advantages' docstring). It runs 20 seeds at
least (`World.min_seeds`), so that its target has the power to show a difference of a few points.
Modes: `sync` (sample 64, wait for all, update; shared improve pool), `async_pool` (K = 8 in flight, a
finished attempt replaced at once, improve prompts from the task's shared pool: Practicum's default) and
`async_slots` (the paper's batch slots: each of the 8 slots continues its own latest valid solution).
Arms: `naive` (no weights), `paper` (every sample weighted Δt / mean Δt, the paper's formula) and `corrected`
(rl_core.advantages' slot-rate weights: a continuation weighs its slot's period (the mean Δt of its attempts)
over the batch's mean, only where the prompt continued its slot asynchronously; 1 elsewhere, so in `sync` and
`async_pool` it is the naive arm exactly).

Reported per world, mode and arm (mean over seeds, with each seed's value in the JSON): the final probability
of the slow family (p_slow) and of the family with the highest expected reward in that world (p_best), the
most probable family, mean Δt, simulated wall-clock; and, per tenth of each run's wall-clock, every family's
share of the completions against π (the policy's probabilities on a solve prompt when each completed),
summarised by their total variation distance, and the slow family's completion share against π(slow).
Launches are not the reference: persistent slots also launch in ∝ π/Δt proportions. Improve prompts pull
completions away from π in every mode (they favour the earlier family), so the `sync` row is the reference
for how far from π completions sit with no arrival bias at all. The simulation is not tuned until the
targets appear; what it finds is what it prints.

Second half (unless --no-sandboxed): bench/_duration_bias_sandboxed.py, real GrammarPolicy programs.

Run: python bench/duration_bias.py [--quick] [--no-sandboxed] [--seeds N] [--attempts N] [--worlds A,B]
         [--json PATH]
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
from scipy import stats

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
SLOW = "gbm_tuned"


@dataclass(frozen=True)
class World:
    """The simulated competition: its families and time limit."""

    name: str
    time_limit_s: float = 900.0  # an attempt over it is killed (Δt = limit, failure)
    changes: dict[str, FamilySpec] = field(default_factory=dict)  # families that differ from FAMILIES
    only: tuple[str, ...] = ()  # when given, the world has these families alone
    keep_bonus: float = 2.0  # TablePolicy's bonus for the earlier solution's family on an improve prompt
    improve_prob: float = 0.5  # the share of prompts that improve an earlier solution, once one exists
    min_seeds: int = 0  # seeds this world runs at least, whatever --seeds or --quick say

    @property
    def families(self) -> dict[str, FamilySpec]:
        families = FAMILIES | self.changes
        return {f: families[f] for f in self.only} if self.only else families


WORLDS = (
    World("paper"),
    World("mediocre_slow", changes={SLOW: replace(FAMILIES[SLOW], score_mean=0.62)}),
    World(
        "risky_slow",
        time_limit_s=600.0,
        changes={SLOW: replace(FAMILIES[SLOW], sigma=0.5, p_crash=0.1, crash_stages=(3, 4))},
    ),
    World("persistent", only=("logreg", SLOW), keep_bonus=5.0, improve_prob=1.0, min_seeds=20),
)
MODES: dict[str, dict[str, Any]] = {
    "sync": {"sync": True, "improve_from": "pool"},
    "async_pool": {"sync": False, "improve_from": "pool"},
    "async_slots": {"sync": False, "improve_from": "slots"},
}
ARMS: dict[str, dict[str, Any]] = {
    "naive": {"duration_aware": False},
    "paper": {"duration_aware": True, "duration_weighting": "paper"},
    "corrected": {"duration_aware": True, "duration_weighting": "slot_rate"},
}
LEARNER = LearnerConfig(objective="ppo", lr=0.01, clip_eps=0.2, ppo_epochs=2, entropy_coef=0.0)
ACTORS, BATCH, WINDOWS = 8, 64, 10
DO_NO_HARM = 0.05  # the corrected arm's p_best may be at most this much below the naive arm's


def simulated_task(world: World) -> TaskInfo:
    return TaskInfo(
        "simulated", "a simulated competition", "accuracy", True, "id", ("y",), world.time_limit_s
    )


def mean_rewards(world: World, draws: int = 4000) -> dict[str, float]:
    """Each family's expected reward in this world, by drawing `draws` simulated attempts of it."""
    executor = SimulatedExecutor(world.families, 1, seed=10_000, reward=paper_reward)
    prompt = Prompt(task=simulated_task(world), kind="solve")
    means = {}
    for family in world.families:
        sample = Sample(prompt, render_program(family), (0.0,), 0, {"family": family})
        outcomes = [executor.outcome_for(Job(f"mc-{n}", sample, "simulated")) for n in range(draws)]
        means[family] = statistics.fmean(o.reward for o in outcomes)
    return means


class Tally:
    """An observer: the time and family of every completion, and π (the policy's probabilities on a solve
    prompt) at that time."""

    def __init__(self, policy: TablePolicy) -> None:
        self.policy = policy
        self.pi = policy.probabilities()
        self.completions: list[tuple[float, str, dict[str, float]]] = []

    def on_attempt_started(self, attempt_id, sample, started_at) -> None:
        pass

    def on_attempt_finished(self, attempt_id, sample, outcome, finished_at, staleness) -> None:
        self.completions.append((finished_at, sample.info["family"], self.pi))

    def on_update(self, version, metrics) -> None:
        self.pi = self.policy.probabilities()

    def shares_over_time(self, wall_s: float) -> list[dict[str, dict[str, float]]]:
        """Per tenth of the run's wall-clock: each family's share of the completions, and its mean π over
        those completions."""

        def window(t: float) -> int:
            return min(int(WINDOWS * t / wall_s), WINDOWS - 1) if wall_s > 0 else 0

        completed: list[list[tuple[str, dict[str, float]]]] = [[] for _ in range(WINDOWS)]
        for t, family, pi in self.completions:
            completed[window(t)].append((family, pi))
        return [
            {"completion": _shares([f for f, _ in w]), "pi": _mean_pi([p for _, p in w])} for w in completed
        ]


def _shares(families: list[str]) -> dict[str, float]:
    counts = Counter(families)
    return {f: n / len(families) for f, n in counts.items()} if families else {}


def _mean_pi(pis: list[dict[str, float]]) -> dict[str, float]:
    return {f: statistics.fmean(p[f] for p in pis) for f in pis[0]} if pis else {}


def total_variation(a: dict[str, float], b: dict[str, float]) -> float:
    """Half the L1 distance between two share tables (0 when equal, 1 when disjoint).

    >>> total_variation({"x": 1.0}, {"x": 0.5, "y": 0.5})
    0.5
    """
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def run_cell(world: World, mode: str, arm: str, seed: int, attempts: int, best: str) -> dict[str, Any]:
    """One training run: the final family probabilities and the completion shares and π over time."""
    policy = TablePolicy(list(world.families), keep_bonus=world.keep_bonus)
    learner = Learner(policy, replace(LEARNER, seed=seed, **ARMS[arm]))
    executor = SimulatedExecutor(world.families, ACTORS, seed, reward=paper_reward)
    tally = Tally(policy)
    config = LoopConfig(attempts=attempts, actors=ACTORS, batch=BATCH, seed=seed,
                        improve_prob=world.improve_prob, **MODES[mode])  # fmt: skip
    summary = run_loop(policy=policy, learner=learner, executor=executor, tasks=[simulated_task(world)],
                       config=config, observer=tally)  # fmt: skip
    probabilities = policy.probabilities()
    windows = tally.shares_over_time(summary.wall_s)
    return {
        "p_slow": probabilities[SLOW],
        "p_best": probabilities[best],
        "top_family": max(probabilities, key=probabilities.__getitem__),
        "mean_duration_s": summary.mean_duration_s,
        "wall_s": summary.wall_s,
        "shares_over_time": windows,
        "completion_pi_tv": statistics.fmean(total_variation(w["completion"], w["pi"]) for w in windows),
        "slow_completion_share": statistics.fmean(w["completion"].get(SLOW, 0.0) for w in windows),
        "slow_pi": statistics.fmean(w["pi"].get(SLOW, 0.0) for w in windows),
    }


def aggregate(runs: list[dict[str, Any]], families: list[str]) -> dict[str, Any]:
    """Means over seeds, with the per-seed values of the two probabilities."""
    mean = statistics.fmean
    windows = [
        {kind: {f: mean(r["shares_over_time"][w][kind].get(f, 0.0) for r in runs) for f in families}
         for kind in ("completion", "pi")}
        for w in range(WINDOWS)
    ]  # fmt: skip
    return {
        "p_slow": mean(r["p_slow"] for r in runs),
        "p_best": mean(r["p_best"] for r in runs),
        "p_slow_per_seed": [r["p_slow"] for r in runs],
        "p_best_per_seed": [r["p_best"] for r in runs],
        "top_family": Counter(r["top_family"] for r in runs).most_common(1)[0][0],
        "mean_duration_s": mean(r["mean_duration_s"] for r in runs),
        "wall_s": mean(r["wall_s"] for r in runs),
        "completion_pi_tv": mean(r["completion_pi_tv"] for r in runs),
        "slow_completion_share": mean(r["slow_completion_share"] for r in runs),
        "slow_pi": mean(r["slow_pi"] for r in runs),
        "shares_over_time": windows,
    }


def run_world(world: World, seeds: int, attempts: int) -> dict[str, Any]:
    seeds = max(seeds, world.min_seeds)
    rewards = mean_rewards(world)
    best = max(rewards, key=rewards.__getitem__)
    cells: dict[str, Any] = {"best_family": best, "mean_reward_per_family": rewards}
    for mode in MODES:
        cells[mode] = {
            arm: aggregate(
                [run_cell(world, mode, arm, s, attempts, best) for s in range(seeds)], list(rewards)
            )
            for arm in ARMS
        }
    return cells


def print_world(world: World, result: dict[str, Any], seeds: int, attempts: int) -> None:
    rows = [
        {"mode": mode, "arm": arm, **{k: v for k, v in result[mode][arm].items() if not isinstance(v, list)}}
        for mode in MODES
        for arm in ARMS
    ]
    title = (
        f"[{world.name}] {seeds} seeds x {attempts} attempts per cell, K = {ACTORS}, B = {BATCH}; best "
        f"family {result['best_family']}: final P(slow), P(best), top family, mean Δt (s), simulated "
        "wall-clock (s); per tenth of the run, averaged: total variation between completion shares and π, "
        "and the slow family's completion share against its π"
    )
    columns = ["mode", "arm", "p_slow", "p_best", "top_family", "mean_duration_s", "wall_s",
               "completion_pi_tv", "slow_completion_share", "slow_pi"]  # fmt: skip
    print_table(rows, columns, title=title)
    rewards = result["mean_reward_per_family"]
    print_table([{"family": f, "mean_reward": r} for f, r in rewards.items()], ["family", "mean_reward"],
                title=f"[{world.name}] expected reward per family (paper preset)")  # fmt: skip


def paired_test(treated: list[float], control: list[float]) -> dict[str, Any]:
    """The mean per-seed difference and a paired t-test's two-sided p (seeds pair the arms)."""
    differences = [t - c for t, c in zip(treated, control, strict=True)]
    same = all(d == differences[0] for d in differences)
    p_value = 1.0 if same else float(stats.ttest_rel(treated, control).pvalue)
    return {"mean_difference": statistics.fmean(differences), "p_value": p_value, "seeds": len(differences)}


def targets_of(results: dict[str, Any]) -> dict[str, Any]:
    """Issue 24's targets: in every world and mode the corrected arm's p_best is at least the naive arm's
    - DO_NO_HARM; in the persistent world's asynchronous slots, where the bias exists, it is above it."""
    found = {}
    for world, cells in results.items():
        for mode in MODES:
            corrected, naive = cells[mode]["corrected"], cells[mode]["naive"]
            found[f"{world}/{mode}: corrected p_best - naive p_best"] = target(
                corrected["p_best"] - naive["p_best"], ">=", -DO_NO_HARM
            ) | {"test": paired_test(corrected["p_best_per_seed"], naive["p_best_per_seed"])}
    if "persistent" in results:
        slots = results["persistent"]["async_slots"]
        found["persistent/async_slots: corrected beats naive"] = target(
            slots["corrected"]["p_best"] - slots["naive"]["p_best"], ">", 0.0
        ) | {"test": paired_test(slots["corrected"]["p_best_per_seed"], slots["naive"]["p_best_per_seed"])}
    return found


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 seeds x 6,000 attempts per cell")
    parser.add_argument("--json", type=Path, default=None, help="write the results here as JSON")
    parser.add_argument("--no-sandboxed", action="store_true", help="skip the real sandboxed programs")
    parser.add_argument("--seeds", type=int, default=None, help="override the number of seeds")
    parser.add_argument("--attempts", type=int, default=None, help="override the attempts per run")
    parser.add_argument("--worlds", default=None, help="comma-separated world names (default: all)")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    torch.set_num_threads(1)  # one logit per family: more threads only cost
    seeds, attempts = (5, 6_000) if args.quick else (10, 20_000)
    seeds, attempts = args.seeds or seeds, args.attempts or attempts
    started = time.perf_counter()
    results: dict[str, Any] = {}
    worlds = [w for w in WORLDS if args.worlds is None or w.name in args.worlds.split(",")]
    for world in worlds:
        results[world.name] = run_world(world, seeds, attempts)
        print_world(world, results[world.name], max(seeds, world.min_seeds), attempts)
    targets = targets_of(results)
    rows = [
        {"target": k, **{x: v for x, v in t.items() if x != "test"}, **t["test"]} for k, t in targets.items()
    ]
    print_table(rows, ["target", "op", "threshold", "measured", "met", "mean_difference", "p_value", "seeds"],
                title="targets (paired t-test over seeds)")  # fmt: skip
    sandboxed = None
    if not args.no_sandboxed:
        from _duration_bias_sandboxed import sandboxed_grammar_results

        sandboxed = sandboxed_grammar_results(args.quick)
    cells = sum(len(MODES) * len(ARMS) * max(seeds, w.min_seeds) for w in worlds)
    print(f"\n{time.perf_counter() - started:.0f} s of computing for {cells} simulated runs")
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
            "slow": SLOW,
            "worlds": [asdict(w) for w in worlds],
            "modes": MODES,
            "arms": ARMS,
            "learner": asdict(LEARNER),
            "actors": ACTORS,
            "batch": BATCH,
            "reward": "paper preset",
        },
        targets=targets,
        results={**results, **({"sandboxed": sandboxed} if sandboxed else {})},
    )


if __name__ == "__main__":
    main()
