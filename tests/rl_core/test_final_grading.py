"""A validation run's final grading (rl_core.final_grading): each chosen program runs once, on the real
competition, through the same executor as the run's attempts, which run on the validation split."""

from __future__ import annotations

from pathlib import Path

from rl_core.environment import TaskFiles
from rl_core.executors import LocalExecutor
from rl_core.final_grading import Chosen, grade_on_hidden_answers
from rl_core.grading import GradingSpec
from rl_core.outcome import AttemptOutcome
from rl_core.testing import TINY_TASK


def task_files(root: Path, name: str) -> TaskFiles:
    return TaskFiles(
        slug="tiny", public_dir=root / name / "public", answers_path=root / name / "answers.csv",
        grading=GradingSpec("rmse", "id", ("y",)), time_limit_s=60.0, memory_mb=512, baseline_score=None,
    )  # fmt: skip


def test_the_chosen_program_runs_once_on_the_real_competition_not_the_split(tmp_path):
    ran: list[tuple[str, Path]] = []

    def runner(response: str, task: TaskFiles, work_dir: Path, **options) -> AttemptOutcome:
        ran.append((response, task.answers_path))
        return AttemptOutcome(status="ok", reward=1.0, valid=True, score=0.25)

    split, real = task_files(tmp_path, "validation"), task_files(tmp_path, "real")
    executor = LocalExecutor(
        {"tiny": split}, 1, tmp_path / "scratch", runner=runner, hidden_tasks={"tiny": real}
    )
    try:
        grades = grade_on_hidden_answers(
            executor, {"tiny": TINY_TASK}, {"tiny": Chosen("0-7", "the best program")}, policy_version=3
        )
    finally:
        executor.close()
    assert ran == [("the best program", real.answers_path)]
    assert grades["tiny"].score == 0.25 and grades["tiny"].chosen.attempt_id == "0-7"


def test_without_hidden_tasks_a_local_executor_grades_every_job_on_its_own_tasks(tmp_path):
    real = task_files(tmp_path, "real")
    executor = LocalExecutor(
        {"tiny": real}, 1, tmp_path / "scratch", runner=lambda *a, **k: AttemptOutcome("ok", 0.0)
    )
    try:
        assert executor.hidden_tasks["tiny"] is real
    finally:
        executor.close()
