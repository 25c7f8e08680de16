"""The paper's evaluation protocol: the policy solves a competition once, improves that solution once, and
the better of the two is its result. Nothing is learned."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from rl_core.executors import Executor, Job
from rl_core.loop_config import NullObserver, Observer
from rl_core.metrics import is_better
from rl_core.outcome import AttemptOutcome
from rl_core.policy import Policy, PreviousSolution, Prompt, Sample, TaskInfo
from rl_core.responses import program_code

EVALUATION = "evaluation"
"""`Sample.info` key set (True) on the samples of `evaluate`, so observers can tell them from training's."""


@dataclass(frozen=True)
class Evaluation:
    """The paper's protocol: solve once, improve once on that solution if it is valid, keep the better."""

    solve: AttemptOutcome
    improve: AttemptOutcome | None
    best: AttemptOutcome
    best_response: str


def evaluate(
    policy: Policy, executor: Executor, task: TaskInfo, *, seed: int = 0, observer: Observer | None = None
) -> Evaluation:
    """Evaluate `policy` on `task` by solve-then-improve (PAPER.md); the executor must be otherwise idle.

    Nothing is learned. The attempt ids are f"eval-{slug}-{seed}-solve" and "...-improve"; `observer` hears
    both attempts (staleness 0), their samples tagged `info[EVALUATION] = True`."""
    generator = torch.Generator().manual_seed(seed)
    observer = observer or NullObserver()
    prefix = f"eval-{task.slug}-{seed}"
    solve_sample = _evaluation_sample(policy, Prompt(task=task, kind="solve"), generator)
    solve = _run_one(executor, Job(f"{prefix}-solve", solve_sample, task.slug), observer)
    if not (solve.valid and solve.score is not None):
        return Evaluation(solve, None, solve, solve_sample.response)
    previous = PreviousSolution(
        program_code(solve_sample.response), solve.stdout_tail, solve.score, attempt_id=f"{prefix}-solve"
    )
    improve_prompt = Prompt(task=task, kind="improve", previous=previous)
    improve_sample = _evaluation_sample(policy, improve_prompt, generator)
    improve = _run_one(executor, Job(f"{prefix}-improve", improve_sample, task.slug), observer)
    if (
        improve.valid
        and improve.score is not None
        and is_better(improve.score, solve.score, higher_is_better=task.higher_is_better)
    ):
        return Evaluation(solve, improve, improve, improve_sample.response)
    return Evaluation(solve, improve, solve, solve_sample.response)


def _evaluation_sample(policy: Policy, prompt: Prompt, generator: torch.Generator) -> Sample:
    sample = policy.sample([prompt], generator=generator)[0]
    return replace(sample, info={**sample.info, EVALUATION: True})


def _run_one(executor: Executor, job: Job, observer: Observer) -> AttemptOutcome:
    observer.on_attempt_started(job.attempt_id, job.sample, executor.now())
    executor.submit(job)
    while True:
        arrived = executor.wait(None)
        if not arrived:
            raise RuntimeError(f"The executor lost evaluation attempt {job.attempt_id}.")
        for finished in arrived:
            if finished.attempt_id == job.attempt_id:
                observer.on_attempt_finished(job.attempt_id, job.sample, finished.outcome, executor.now(), 0)
                return finished.outcome
