"""A validation run's one look at the hidden answers (`reward_source="validation"`, issue 28).

Every attempt of such a run runs on a validation split of the competition's labelled training table
(rl_core.validation) and is scored on the split's answers: rewards, improve prompts, pools and the best so far
never see a score computed from the hidden answers. When training is over, the run's chosen program per
competition (its best on validation, or the kept program of the paper's solve-then-improve evaluation when
the run has one) runs once more, on the competition's real public data, and is graded once on the hidden
answers. That grade is the run's result on a leaderboard; nothing learns from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rl_core.executors import Executor, Job
from rl_core.outcome import AttemptOutcome
from rl_core.policy import Prompt, Sample, TaskInfo

FINAL_PREFIX = "final-"
"""The final gradings' attempt ids: f"{FINAL_PREFIX}{slug}"."""


@dataclass(frozen=True)
class Chosen:
    """The program a run stands by on one competition: the attempt it came from and its response."""

    attempt_id: str
    response: str


@dataclass(frozen=True)
class FinalGrade:
    """A chosen program's one run on the real data, graded on the hidden answers."""

    slug: str
    chosen: Chosen
    outcome: AttemptOutcome

    @property
    def score(self) -> float | None:
        return self.outcome.score if self.outcome.valid else None


def grade_on_hidden_answers(
    executor: Executor, tasks: Mapping[str, TaskInfo], chosen: Mapping[str, Chosen], *, policy_version: int
) -> dict[str, FinalGrade]:
    """Run each competition's chosen program once through `executor` as a job `on_hidden_answers`, and wait
    for all of them; slug -> its FinalGrade. The executor must be otherwise idle. A competition with no
    chosen program (no valid attempt on validation) is left out: it has no result to grade."""
    jobs = {
        f"{FINAL_PREFIX}{slug}": (slug, final_job(slug, tasks[slug], pick, policy_version))
        for slug, pick in chosen.items()
    }
    for _, job in jobs.values():
        executor.submit(job)
    grades: dict[str, FinalGrade] = {}
    while len(grades) < len(jobs):
        arrived = executor.wait(None)
        if not arrived:
            missing = sorted(set(jobs) - {f"{FINAL_PREFIX}{slug}" for slug in grades})
            raise RuntimeError(f"The executor lost the final grading of {', '.join(missing)}.")
        for finished in arrived:
            if finished.attempt_id in jobs:
                slug, _ = jobs[finished.attempt_id]
                grades[slug] = FinalGrade(slug, chosen[slug], finished.outcome)
    return grades


def final_job(slug: str, task: TaskInfo, pick: Chosen, policy_version: int) -> Job:
    """The job that runs `pick` on the real data: a solve-prompt sample of the chosen response, which carries
    no log-probs because nothing learns from it."""
    sample = Sample(
        prompt=Prompt(task=task, kind="solve"), response=pick.response, logprobs=(),
        policy_version=policy_version, info={"final_of": pick.attempt_id},
    )  # fmt: skip
    return Job(f"{FINAL_PREFIX}{slug}", sample, slug, on_hidden_answers=True)
