"""The second half of bench/duration_bias.py: the naive and paper-weighted arms on real sandboxed
GrammarPolicy programs for one bundled competition (LocalExecutor, 2 sandboxes in flight, paper reward, the
loop's default asynchronous shared-pool mode, where the corrected arm equals the naive one). One seed, a few
dozen attempts: it shows what the weights do to real durations, not a significance.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from _common import print_table

from rl_core.learner import Learner, LearnerConfig
from rl_core.loop import LoopConfig, run_loop
from rl_core.policy import Sample

ARMS: dict[str, dict[str, Any]] = {
    "naive": {"duration_aware": False},
    "paper": {"duration_aware": True, "duration_weighting": "paper"},
}
LEARNER = LearnerConfig(objective="ppo", clip_eps=0.2, ppo_epochs=2, entropy_coef=0.0, max_grad_norm=1.0)


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


SANDBOXED_SLUG = "digits-recognition"
"""The bundled competition of the sandboxed half: 1,797 8x8 digit images, where the grammar's families range
from a fraction of a second (kNN, linear) to many seconds (boosting, MLPs), so durations really differ."""
SANDBOXED_ARMS = ("naive", "paper")


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
    learner = Learner(policy, replace(LEARNER, lr=0.05, seed=0, **ARMS[arm]))  # asynchronous, shared pool
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
