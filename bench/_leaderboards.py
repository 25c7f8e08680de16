"""Kaggle-style public and private leaderboards for bench/vs_automl.py (no other benchmark uses them).

On Kaggle a submission predicts every test row; the public leaderboard scores some of the rows while the
competition runs, and the private leaderboard scores the rest once, at the end. Here:

- `split_answers` writes the hidden answers as two files, `public` and `private`, split by id with a fixed
  seed, before either arm starts (the organiser's step: it is the only read of the whole answers file).
- `public_task_files` is the competition as Practicum's search sees it: the same public files and limits,
  with `answers_path` the public half. Nothing the search runs is given a path to the private half or to
  the whole answers file, so rewards, the improve pool and the best-so-far are graded on the public half.
- `OnPublicHalf` wraps the attempt runner: rl_core.environment grades a submission against every row of
  `answers_path`, so on the public half alone it rejects a full submission ("unexpected ids"); the wrapper
  replaces that verdict with the grade of the submission's public rows, and the reward with the one
  rl_core.reward gives that grade (the same RewardConfig, stage credit and metric).
- `half_grade(submission, halves.private, ...)` is the final grading, once per arm, after both searches.

Rows whose id is in neither half are ignored by both halves' grades; ids are matched as text, as written.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rl_core.environment import DEFAULT_REWARD, TaskFiles
from rl_core.grading import Grade, GradingSpec, grade_frames, grade_submission
from rl_core.metrics import get_metric
from rl_core.reward import compute_reward

UNREADABLE = (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, KeyError, OSError)
"""What reading a submission and its id column may raise; rl_core.grading then says why it is invalid."""


@dataclass(frozen=True)
class Halves:
    """The hidden answers of one competition as two CSV files with the same columns; no id is in both."""

    public: Path
    private: Path
    spec: GradingSpec


def split_answers(answers_path: Path, spec: GradingSpec, out_dir: Path, *, seed: int = 0) -> Halves:
    """Write `answers_path`'s rows to out_dir/public.csv (half of them, drawn with `seed`) and
    out_dir/private.csv (the rest), cells as the text they were."""
    answers = pd.read_csv(answers_path, dtype=str, keep_default_na=False)
    public = np.zeros(len(answers), dtype=bool)
    public[np.random.default_rng(seed).permutation(len(answers))[: len(answers) // 2]] = True
    out_dir.mkdir(parents=True, exist_ok=True)
    halves = Halves(out_dir / "public.csv", out_dir / "private.csv", spec)
    answers[public].to_csv(halves.public, index=False)
    answers[~public].to_csv(halves.private, index=False)
    return halves


def half_grade(submission_path: Path, answers_path: Path, spec: GradingSpec) -> Grade:
    """Grade the rows of a full submission whose ids are in `answers_path` (one half) against that half.

    A submission that cannot be read, or has no id column, gets rl_core.grading's verdict (invalid, with
    its sentence); a missing id of the half makes it invalid as a missing id of the whole would.
    """
    answers = pd.read_csv(answers_path, dtype=str, keep_default_na=False)
    try:
        submission = pd.read_csv(
            submission_path, dtype=str, keep_default_na=False, index_col=False, encoding="utf-8-sig"
        )
        inside = submission[spec.id_column].isin(answers[spec.id_column])
    except UNREADABLE:
        return grade_submission(submission_path, answers_path, spec)
    return grade_frames(submission[inside], answers, spec)


def public_task_files(files: TaskFiles, halves: Halves) -> TaskFiles:
    """`files` with the public half as its answers, the sample submission's public-half score as its
    baseline (the normalized reward's), and no leaderboard (its scores are of the whole test set)."""
    sample = files.public_dir / "sample_submission.csv"
    baseline = half_grade(sample, halves.public, halves.spec).score if sample.is_file() else None
    return replace(files, answers_path=halves.public, baseline_score=baseline, leaderboard=None)


class OnPublicHalf:
    """An attempt runner (run_response's signature) that grades and rewards on the public half.

    Call it with `public_task_files(...)` as the task: `run` runs the attempt (and its environment's
    rejected grade against the half is discarded); a program that finished with a submission is then
    graded on its public rows by `half_grade`, and rewarded by rl_core.reward for that grade.
    """

    def __init__(self, run: Any) -> None:
        self.run = run

    def __call__(self, response: str, task: TaskFiles, work_dir: Path, **options: Any) -> Any:
        outcome = self.run(response, task, work_dir, **options)
        submission = work_dir / "submission" / "submission.csv"
        if outcome.status != "ok" or not submission.is_file():
            return outcome  # the environment's verdict stands: nothing was graded
        grade = half_grade(submission, task.answers_path, task.grading)
        reward = public_reward(task, grade, len(outcome.stages), options.get("reward", DEFAULT_REWARD))
        return replace(outcome, valid=grade.valid, score=grade.score, grade_error=grade.error, reward=reward)


def public_reward(task: TaskFiles, grade: Grade, stages: int, config: Any) -> float:
    """rl_core.reward.compute_reward for a public-half grade (the task's baseline is the half's)."""
    metric = get_metric(task.grading.metric)
    return compute_reward(
        valid=grade.valid, score=grade.score, stages_reached=stages, config=config,
        higher_is_better=metric.higher_is_better, baseline_score=task.baseline_score,
        perfect_score=metric.perfect, leaderboard=None,
    )  # fmt: skip
