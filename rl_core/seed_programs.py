"""Seed programs: run known programs (a baseline, earlier solutions) through an executor before the first
attempt, and keep the valid ones as improve-pool entries: `PreviousSolution` (the program, the tail of its
output, its score). Not the learner's advantage baselines (`rl_core.advantages`).

The loop uses this to seed each task's pool before a new run's first attempt, so that improve prompts
exist from the start (`rl_core.loop.run_loop`'s ``baselines``); warm starts use it to give improve
demonstrations a real earlier solution with its real output and score (`rl_core.warmstart.demonstrations`).

These runs are not policy samples: their `Sample` has no log-probs, ``info["baseline"]`` is True and
``info["family"]`` is `BASELINE_FAMILY`. Nothing here learns from them or reports them to an observer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rl_core.executors import Executor, Job
from rl_core.outcome import AttemptOutcome
from rl_core.policy import PreviousSolution, Prompt, Sample, TaskInfo
from rl_core.responses import parse_response

BASELINE_FAMILY = "baseline"
"""``Sample.info["family"]`` of a baseline run (a simulated executor needs a family of that name)."""


def baseline_sample(task: TaskInfo, response: str, *, policy_version: int = 0) -> Sample:
    """A solve-prompt `Sample` that carries a known response, ready for an executor `Job`."""
    return Sample(
        prompt=Prompt(task=task, kind="solve"),
        response=response,
        logprobs=(),
        policy_version=policy_version,
        info={"family": BASELINE_FAMILY, "baseline": True},
    )


def run_jobs(executor: Executor, jobs: Sequence[Job]) -> dict[str, AttemptOutcome]:
    """Submit every job, wait for all of them, and return attempt id -> outcome.

    Call this when nothing else is in flight on `executor`: every report it returns is taken as one of
    `jobs`. Raises RuntimeError if the executor stops reporting before all have finished.
    """
    for job in jobs:
        executor.submit(job)
    outcomes: dict[str, AttemptOutcome] = {}
    while len(outcomes) < len(jobs):
        arrived = executor.wait(None)
        if not arrived:
            raise RuntimeError(f"The executor lost {len(jobs) - len(outcomes)} baseline runs.")
        outcomes |= {finished.attempt_id: finished.outcome for finished in arrived}
    return outcomes


def previous_solutions(
    executor: Executor,
    tasks: Sequence[TaskInfo],
    responses: Mapping[str, Sequence[str]],
    *,
    prefix: str,
) -> dict[str, list[PreviousSolution]]:
    """Run each task's responses once and keep the valid ones as improve-pool entries.

    Args:
        executor: runs the programs; nothing else may be in flight on it.
        tasks: the tasks; those without responses are skipped.
        responses: slug -> responses (a plan and one ```python block each).
        prefix: attempt ids are f"{prefix}-{n}" (n counts over all responses), e.g. "0-baseline".
    Returns:
        slug -> the valid ones as PreviousSolution (code, stdout tail, score, attempt id), in the order
        given; a slug with no valid response is absent.
    """
    jobs: list[Job] = []
    for task in tasks:
        for response in responses.get(task.slug, ()):
            jobs.append(Job(f"{prefix}-{len(jobs)}", baseline_sample(task, response), task.slug))
    outcomes = run_jobs(executor, jobs)
    found: dict[str, list[PreviousSolution]] = {}
    for job in jobs:
        entry = as_previous(job.sample.response, outcomes[job.attempt_id], attempt_id=job.attempt_id)
        if entry is not None:
            found.setdefault(job.task_slug, []).append(entry)
    return found


def as_previous(response: str, outcome: AttemptOutcome, *, attempt_id: str = "") -> PreviousSolution | None:
    """The improve-pool entry for a finished run of `response` (the attempt `attempt_id`), or None when it
    wrote no valid submission."""
    code = parse_response(response).code
    if code is None or not outcome.valid or outcome.score is None:
        return None
    return PreviousSolution(code, outcome.stdout_tail, float(outcome.score), attempt_id)
