"""The JSON shapes of runs, attempts and learner steps: one place for live events and the API alike."""

from __future__ import annotations

from typing import Any

from rl_core.metrics import get_metric
from webapp.runs.models import Attempt, LearnerStep, Run


def attempt_summary(attempt: Attempt) -> dict[str, Any]:
    """What the run page's stream and charts need for one attempt (no program text: that is per page)."""
    return {
        "id": attempt.id,
        "key": attempt.key,
        "number": attempt.number,
        "competition": attempt.competition.slug,
        "status": attempt.status,
        "prompt_kind": attempt.prompt_kind,
        "answers": attempt.answers,
        "parent_key": attempt.parent_key,
        "family": attempt.family,
        "policy_version": attempt.policy_version,
        "staleness": attempt.staleness,
        "stages": attempt.stages,
        "stage_count": len(attempt.stages),
        "valid": attempt.valid,
        "score": attempt.score,
        "reward": attempt.reward,
        "duration_s": attempt.duration_s,
        "isolation": attempt.isolation,
        "instrumentation": attempt.instrumentation,
        "started_at": attempt.started_at.isoformat() if attempt.started_at else None,
        "finished_at": attempt.finished_at.isoformat() if attempt.finished_at else None,
    }


ATTEMPT_POINT_FIELDS = (
    "id", "number", "status", "valid", "score", "reward", "duration_s", "family", "prompt_kind",
    "started_at", "finished_at",
)  # fmt: skip


def attempt_point(row: dict[str, Any]) -> dict[str, Any]:
    """An attempt as a point of the run page's charts: `attempt_summary`'s fields that the charts draw,
    from a `.values(*ATTEMPT_POINT_FIELDS)` row (no model instance: a snapshot holds hundreds)."""
    point = {field: row[field] for field in ATTEMPT_POINT_FIELDS}
    for field in ("started_at", "finished_at"):
        point[field] = point[field].isoformat() if point[field] else None
    return point


def attempt_detail(attempt: Attempt) -> dict[str, Any]:
    return {
        **attempt_summary(attempt),
        "plan": attempt.plan,
        "response": attempt.response,
        "program": attempt.program,
        "instrumented_program": attempt.instrumented_program,
        "stdout_tail": attempt.stdout_tail,
        "stderr_tail": attempt.stderr_tail,
        "grade_error": attempt.grade_error,
        "exit_code": attempt.exit_code,
        "info": attempt.info,
    }


def learner_step_summary(step: LearnerStep) -> dict[str, Any]:
    return {
        "version": step.version,
        "attempts_done": step.attempts_done,
        "wall_s": step.wall_s,
        **step.metrics,
    }


def run_summary(run: Run) -> dict[str, Any]:
    competitions = list(run.competitions.all())
    return {
        "id": run.id,
        "name": run.name,
        "status": run.status,
        "active": run.is_active,
        "policy": run.policy,
        "owner": run.owner.username if run.owner_id and run.owner else None,
        "is_public": run.is_public,
        "competitions": [c.slug for c in competitions],
        "metric": competitions[0].metric if competitions else None,
        "higher_is_better": get_metric(competitions[0].metric).higher_is_better if competitions else True,
        "config": run.config,
        "policy_version": run.policy_version,
        "attempts_done": run.attempts_done,
        "best_score": run.best_score,
        "best_attempt_id": run.best_attempt_id,
        "reward_source": (run.config or {}).get("reward_source", "hidden"),
        "final_score": run.final_score,
        "final_valid": run.final_valid,
        "final_attempt_id": run.final_attempt_id,
        "hardware": run.hardware,
        "error": run.error,
        "warm_start": run.warm_start_progress,
        "warm_start_from": run.warm_start_from_id,
        "seq": run.event_seq,
        "created_at": run.created_at.isoformat() if run.created_at else None,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }
