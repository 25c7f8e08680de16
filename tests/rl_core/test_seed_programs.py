"""Seed programs: known programs become improve-pool entries, and the loop seeds its pools with them."""

from __future__ import annotations

import dataclasses

import pytest

from rl_core.executors import FamilySpec, SimulatedExecutor
from rl_core.learner import Learner, LearnerConfig
from rl_core.loop import LoopConfig, run_loop
from rl_core.policies.table import TablePolicy, render_program
from rl_core.policy import TaskInfo
from rl_core.responses import program_code
from rl_core.seed_programs import previous_solutions

TASK = TaskInfo("comp", "a task", "accuracy", True, "id", ("y",), 5000.0)
BASELINE = render_program("baseline")
WORKING = {
    "fast": FamilySpec(median_s=1.0, sigma=0.3, score_mean=0.5, score_std=0.05),
    "medium": FamilySpec(median_s=5.0, sigma=0.5, p_crash=0.2, score_mean=0.7, score_std=0.05),
    "baseline": FamilySpec(median_s=2.0, sigma=0.0, score_mean=0.4),
}
BROKEN = WORKING | {"baseline": FamilySpec(median_s=2.0, sigma=0.0, p_crash=1.0)}


class Recorder:
    def __init__(self) -> None:
        self.started: list = []
        self.finished: list = []

    def on_attempt_started(self, attempt_id, sample, started_at):
        self.started.append((attempt_id, sample))

    def on_attempt_finished(self, attempt_id, sample, outcome, finished_at, staleness):
        self.finished.append(attempt_id)

    def on_update(self, version, metrics):
        pass


class Crash(Exception):
    pass


class CrashAt(Recorder):
    def on_update(self, version, metrics):
        if version == 4:
            raise Crash


class RecordingSimulator(SimulatedExecutor):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.submitted: list[str] = []

    def submit(self, job):
        self.submitted.append(job.attempt_id)
        super().submit(job)


def run(table=WORKING, *, observer=None, baselines=None, config=None, **kwargs):
    policy = TablePolicy(["fast", "medium"])
    executor = RecordingSimulator(table, 4, 0)
    summary = run_loop(
        policy=policy,
        learner=Learner(policy, LearnerConfig(lr=0.05, seed=1)),
        executor=executor,
        tasks=[TASK],
        config=config or LoopConfig(attempts=24, actors=4, batch=4, improve_prob=1.0, checkpoint_every=2),
        observer=observer or Recorder(),
        baselines=baselines,
        **kwargs,
    )
    return summary, executor, policy


def test_valid_responses_become_pool_entries_with_their_output_and_score():
    too_slow = dataclasses.replace(TASK, slug="slow", time_limit_s=1.0)  # the baseline needs 2 s: a timeout
    executor = RecordingSimulator(WORKING, 2, 0)
    found = previous_solutions(
        executor, [TASK, too_slow], {"comp": [BASELINE], "slow": [BASELINE]}, prefix="p"
    )
    assert executor.submitted == ["p-0", "p-1"]
    assert list(found) == ["comp"]
    [entry] = found["comp"]
    assert (entry.code, entry.score) == (program_code(BASELINE), pytest.approx(0.4))


def test_a_valid_baseline_gives_improve_prompts_from_the_first_attempt():
    observer = Recorder()
    run(observer=observer, baselines={"comp": BASELINE})
    first = observer.started[0][1].prompt
    assert first.kind == "improve"
    assert first.previous.code == program_code(BASELINE)
    assert first.previous.score == pytest.approx(0.4)


def test_an_improve_prompt_from_a_baseline_names_the_baseline_attempt():
    observer = Recorder()
    run(observer=observer, baselines={"comp": BASELINE})
    assert observer.started[0][1].prompt.previous.attempt_id == "0-baseline-0"  # f"{seed}-baseline-{n}"


def test_without_baselines_the_first_attempts_are_solve_prompts():
    observer = Recorder()
    run(observer=observer)
    assert observer.started[0][1].prompt.kind == "solve"


def test_an_invalid_baseline_leaves_the_pool_empty():
    observer = Recorder()
    run(BROKEN, observer=observer, baselines={"comp": BASELINE})
    assert observer.started[0][1].prompt.kind == "solve"


def test_baseline_runs_are_not_reported_counted_or_learned_from():
    observer = Recorder()
    summary, executor, _ = run(observer=observer, baselines={"comp": BASELINE})
    assert executor.submitted[0] == "0-baseline-0"
    assert all("baseline" not in attempt_id for attempt_id, _ in observer.started)
    assert (summary.attempts, summary.updates) == (24, 6)
    assert len(observer.finished) == 24


def test_a_resumed_run_keeps_its_seeded_pool_without_running_the_baseline_again(tmp_path):
    straight, _, straight_policy = run(baselines={"comp": BASELINE}, checkpoints=tmp_path / "straight")
    with pytest.raises(Crash):
        run(observer=CrashAt(), baselines={"comp": BASELINE}, checkpoints=tmp_path / "crashed")
    resumed, executor, resumed_policy = run(
        baselines={"comp": BASELINE}, checkpoints=tmp_path / "crashed", resume=tmp_path / "crashed"
    )
    assert not any("baseline" in attempt_id for attempt_id in executor.submitted)
    timing = ("wall_s", "utilization")  # the same up to float rounding: the clock restarts on resume
    assert dataclasses.replace(resumed, wall_s=0, utilization=0) == dataclasses.replace(
        straight, wall_s=0, utilization=0
    )
    assert [getattr(resumed, f) for f in timing] == pytest.approx([getattr(straight, f) for f in timing])
    assert resumed_policy.logits.tolist() == straight_policy.logits.tolist()
