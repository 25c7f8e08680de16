"""What the agent loop needs from a competition row: `TaskFiles` for the environment and `TaskInfo`
for the policy. Only workers and the supervisor import this (it pulls in torch through rl_core)."""

from __future__ import annotations

from rl_core.environment import TaskFiles
from rl_core.features import data_preview, task_features
from rl_core.metrics import get_metric
from rl_core.policy import TaskInfo
from webapp.competitions import storage
from webapp.competitions.models import Competition
from webapp.competitions.selectors import competition_grading_spec


def competition_task_files(*, competition: Competition) -> TaskFiles:
    """The competition as the environment sees it: public files, hidden answers (for the grader), limits."""
    if not storage.public_dir(competition.slug).is_dir():
        raise FileNotFoundError(
            f"The files of competition {competition.slug!r} are not visible under "
            f"{storage.competitions_root()} "
            "on this machine (is PRACTICUM_DATA_DIR the shared folder?)."
        )
    return TaskFiles(
        slug=competition.slug,
        public_dir=storage.public_dir(competition.slug),
        answers_path=storage.answers_path(competition.slug),
        grading=competition_grading_spec(competition=competition),
        time_limit_s=competition.time_limit_s,
        memory_mb=competition.memory_mb,
        baseline_score=competition.baseline_score,
        leaderboard=tuple(competition.leaderboard_scores) if competition.leaderboard_scores else None,
    )


def competition_task_info(*, competition: Competition) -> TaskInfo:
    """The competition as a policy sees it: description, file list, data preview, features."""
    public = storage.public_dir(competition.slug)
    metric = get_metric(competition.metric)
    return TaskInfo(
        slug=competition.slug,
        description=competition.description,
        metric=competition.metric,
        higher_is_better=metric.higher_is_better,
        id_column=competition.id_column,
        target_columns=tuple(competition.target_columns),
        time_limit_s=competition.time_limit_s,
        files=tuple(f["name"] for f in competition.public_files),
        data_preview=data_preview(public),
        features=task_features(
            public,
            id_column=competition.id_column,
            target_columns=tuple(competition.target_columns),
            metric=competition.metric,
        ),
    )
