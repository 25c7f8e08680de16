"""The competition files a run's attempts run on, by the run's reward source (issue 28).

`hidden` (the paper's setup): the competition itself, graded on its hidden answers. `validation`: the
validation split of the competition's labelled training table (rl_core.validation), derived once per run
and competition into the run's folder (`validation_dir`), where the supervisor and every sandbox worker of
a cluster read it (PRACTICUM_DATA_DIR is shared); only a job `on_hidden_answers`, the run's one final
grading, runs on the real competition. The split is seeded by the run's seed, so a resumed run or a second
worker finds the very same files.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

from rl_core.environment import TaskFiles
from rl_core.grading import GradingSpec, grade_submission
from rl_core.run_spec import RunConfig
from rl_core.validation import ValidationSettings, derive_validation
from webapp import storage
from webapp.competitions.agent_inputs import competition_task_files
from webapp.competitions.models import Competition


def run_task_files(
    *, run_id: int, competition: Competition, config: RunConfig, on_hidden_answers: bool = False
) -> TaskFiles:
    """What an attempt of run `run_id` on `competition` runs on and is graded against (module docstring)."""
    real = competition_task_files(competition=competition)
    if config.reward_source != "validation" or on_hidden_answers:
        return real
    return validation_task_files(real, validation_dir(run_id, competition.slug), config.validation_settings())


def validation_dir(run_id: int, slug: str) -> Path:
    return storage.run_root(run_id) / "validation" / slug


def validation_task_files(real: TaskFiles, dest: Path, settings: ValidationSettings) -> TaskFiles:
    """The validation competition of `real` in `dest`: derived there when missing (ValueError when no split
    can be made, naming why), else read back. Two processes deriving at once write the same bytes; the
    one whose folder lands second keeps the first one's."""
    if not dest.exists():
        try:
            return derive_validation(real, dest, settings)
        except OSError:  # another process renamed its copy into place first
            if not dest.exists():
                raise
    split = dataclasses.replace(real, public_dir=dest / "public", answers_path=dest / "answers.csv")
    return dataclasses.replace(split, baseline_score=split_baseline(split.public_dir, split.answers_path,
                                                                    split.grading))  # fmt: skip


@functools.lru_cache(maxsize=64)
def split_baseline(public_dir: Path, answers_path: Path, grading: GradingSpec) -> float | None:
    """The derived sample submission's score on the validation answers, as derive_validation computed it."""
    grade = grade_submission(public_dir / "sample_submission.csv", answers_path, grading)
    return grade.score if grade.valid else None
