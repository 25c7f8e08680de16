"""rl_core.lm_instrumenting: the frozen LM marks up each program before dispatch, and the attempts of a
run record whose markers ran: the LM's when they pass the AST check where the program runs, else the
rules'."""

from __future__ import annotations

import dataclasses

import pytest

from rl_core.environment import TaskFiles
from rl_core.executors import Finished, Job, LocalExecutor
from rl_core.grading import GradingSpec
from rl_core.learner import Learner, LearnerConfig
from rl_core.lm_instrumenting import LMInstrumentingExecutor, with_lm_markup
from rl_core.loop import LoopConfig, run_loop
from rl_core.policies.table import TablePolicy
from rl_core.policy import Prompt, Sample, TaskInfo

TASK = TaskInfo("tiny", "", "accuracy", True, "id", ("y",), 60.0)
PROGRAM = """import csv

rows = list(csv.DictReader(open("input/test.csv")))
with open("submission/submission.csv", "w") as out:
    out.write("id,y\\n" + "".join(f"{row['id']},no\\n" for row in rows))
"""
RESPONSE = f"Plan: predict no.\n\n```python\n{PROGRAM}```\n"


def job(attempt_id: str = "0-0", response: str = RESPONSE) -> Job:
    return Job(attempt_id, Sample(Prompt(task=TASK, kind="solve"), response, (0.0,), 0), "tiny")


def marking_lm(prompt: str) -> str:
    """A stand-in for a good instrumenting LM: the prompt's program with a marker after its first line."""
    program = prompt.rsplit("```python\n", 1)[1].rsplit("\n```", 1)[0]
    first, rest = program.split("\n", 1)
    return f"```python\n{first}\n__practicum_mark__('imports_done')\n{rest}```"


class Inner:
    """An executor that only remembers what it was given (the wrapper's logic is what is tested)."""

    capacity = 3

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.busy_s = 1.5

    def submit(self, job: Job) -> None:
        self.jobs.append(job)

    def wait(self, timeout_s: float | None) -> list[Finished]:
        return [Finished(j.attempt_id, None) for j in self.jobs]

    def cancel(self, attempt_id: str) -> None: ...

    def now(self) -> float:
        return 7.0

    def close(self) -> None: ...


def test_each_submitted_job_carries_the_lms_markup_of_its_program():
    inner = Inner()
    LMInstrumentingExecutor(inner, marking_lm).submit(job())
    [sent] = inner.jobs
    assert sent.lm_markup == PROGRAM.replace("\n", "\n__practicum_mark__('imports_done')\n", 1)
    assert dataclasses.replace(sent, lm_markup=None) == job()


def test_a_response_without_code_carries_an_empty_markup_and_the_lm_is_not_asked():
    asked: list[str] = []
    assert with_lm_markup(job(response="no code"), lambda p: asked.append(p) or "").lm_markup == ""
    assert asked == []


def test_a_job_submitted_again_after_a_resume_is_marked_up_again():
    inner, prompts = Inner(), []
    executor = LMInstrumentingExecutor(inner, lambda p: prompts.append(p) or marking_lm(p))
    executor.submit(job())
    executor.submit(job())
    assert len(prompts) == 2 and inner.jobs[0] == inner.jobs[1]


def test_the_wrapper_is_its_inner_executor_in_everything_but_submit():
    inner = Inner()
    executor = LMInstrumentingExecutor(inner, marking_lm)
    executor.submit(job())
    assert (executor.capacity, executor.now(), executor.busy_s) == (3, 7.0, 1.5)
    assert [f.attempt_id for f in executor.wait(None)] == ["0-0"]


@pytest.fixture
def tiny_task(tmp_path) -> TaskFiles:
    public, private = tmp_path / "tiny" / "public", tmp_path / "tiny" / "private"
    public.mkdir(parents=True)
    private.mkdir()
    (public / "test.csv").write_text("id,x\n" + "".join(f"{i},{i}\n" for i in range(8, 12)))
    (private / "answers.csv").write_text("id,y\n8,no\n9,yes\n10,no\n11,yes\n")
    grading = GradingSpec("accuracy", "id", ("y",))
    return TaskFiles("tiny", public, private / "answers.csv", grading, 60, 2048, baseline_score=0.5)


class FixedProgramPolicy(TablePolicy):
    """A TablePolicy whose every sample is RESPONSE: real programs for the sandbox, a policy that learns."""

    def sample(self, prompts, *, generator):
        samples = super().sample(prompts, generator=generator)
        return [dataclasses.replace(s, response=RESPONSE) for s in samples]


class Outcomes:
    """An observer that keeps each finished attempt's outcome."""

    def __init__(self) -> None:
        self.outcomes: list = []

    def on_attempt_started(self, attempt_id, sample, started_at) -> None: ...

    def on_attempt_finished(self, attempt_id, sample, outcome, finished_at, staleness) -> None:
        self.outcomes.append(outcome)

    def on_update(self, version, metrics) -> None: ...


def run_with_instrumenter(generate, tiny_task, scratch) -> list:
    """The outcomes of a 2-attempt run of the loop whose programs the LM `generate` instruments."""
    policy, observer = FixedProgramPolicy(["constant"]), Outcomes()
    executor = LMInstrumentingExecutor(LocalExecutor({"tiny": tiny_task}, 2, scratch), generate)
    try:
        run_loop(
            policy=policy, learner=Learner(policy, LearnerConfig(lr=0.01)), executor=executor, tasks=[TASK],
            config=LoopConfig(attempts=2, actors=2, batch=2), observer=observer,
        )  # fmt: skip
    finally:
        executor.close()
    return observer.outcomes


@pytest.mark.slow
def test_a_run_runs_the_lms_markers_when_they_pass_the_ast_check(tiny_task, data_dir):
    outcomes = run_with_instrumenter(marking_lm, tiny_task, data_dir / "attempts")
    assert [(o.instrumentation, o.stages, o.valid) for o in outcomes] == [("lm", ("imports_done",), True)] * 2
    assert all("__practicum_mark__('imports_done')" in o.instrumented_program for o in outcomes)


@pytest.mark.slow
def test_a_run_with_a_tiny_random_lm_falls_back_to_the_rules_markers(tiny_task, data_dir):
    from rl_core.policies.lm.config import LMPolicyConfig
    from rl_core.policies.lm.policy import LMPolicy
    from rl_core.testing import tiny_llama, tiny_tokenizer

    tokenizer = tiny_tokenizer()
    config = LMPolicyConfig(max_new_tokens=8, lora_r=4, device="cpu", sampler="transformers")
    lm = LMPolicy(config, model=tiny_llama(tokenizer), tokenizer=tokenizer)
    outcomes = run_with_instrumenter(lm.generate_frozen, tiny_task, data_dir / "attempts")
    assert [o.instrumentation for o in outcomes] == ["lm-fallback"] * 2
    assert all(o.valid and "imports_done" in o.stages for o in outcomes)  # the rules' markers ran
