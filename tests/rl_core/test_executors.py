"""Executors: the discrete-event simulation's clock, outcomes and limits, and the local thread pool."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from rl_core.executors import STAGES, FamilySpec, Job, LocalExecutor, SimulatedExecutor
from rl_core.policies.table import render_program
from rl_core.policy import Prompt, Sample, TaskInfo

TABLE = {
    "fast": FamilySpec(median_s=1.0, sigma=0.0, score_mean=0.5),
    "slow": FamilySpec(median_s=10.0, sigma=0.0, score_mean=0.9),
    "crash": FamilySpec(median_s=2.0, sigma=0.0, p_crash=1.0, crash_stages=(2,)),
    "noisy": FamilySpec(median_s=5.0, sigma=1.0, p_crash=0.3, score_mean=0.5, score_std=0.2),
}


def make_job(attempt_id: str, family: str, *, time_limit_s: float = 100.0) -> Job:
    task = TaskInfo("comp", "", "accuracy", True, "id", ("y",), time_limit_s)
    sample = Sample(Prompt(task=task, kind="solve"), render_program(family), (-1.0,), 0, {"family": family})
    return Job(attempt_id, sample, "comp")


def simulator(capacity: int = 4, seed: int = 0) -> SimulatedExecutor:
    return SimulatedExecutor(TABLE, capacity, seed)


def test_simulated_clock_jumps_to_each_next_completion():
    executor = simulator()
    executor.submit(make_job("s", "slow"))
    executor.submit(make_job("f", "fast"))
    first = executor.wait(None)
    assert [f.attempt_id for f in first] == ["f"]
    assert executor.now() == pytest.approx(1.0)
    assert [f.attempt_id for f in executor.wait(None)] == ["s"]
    assert executor.now() == pytest.approx(10.0)


def test_simulated_wait_returns_nothing_when_the_timeout_comes_first():
    executor = simulator()
    executor.submit(make_job("s", "slow"))
    assert executor.wait(4.0) == []
    assert executor.now() == 4.0


def test_simulated_wait_returns_at_once_when_nothing_is_in_flight():
    assert simulator().wait(None) == []


def test_simulated_outcomes_depend_only_on_seed_and_attempt_id():
    jobs = [make_job(f"0-{n}", "noisy") for n in range(20)]
    first, second, other = simulator(seed=3), simulator(seed=3), simulator(seed=4)
    assert [first.outcome_for(j) for j in jobs] == [second.outcome_for(j) for j in reversed(jobs)][::-1]
    assert [first.outcome_for(j) for j in jobs] != [other.outcome_for(j) for j in jobs]


def test_a_valid_attempt_reaches_every_stage_and_earns_its_score_plus_stage_credit():
    outcome = simulator().outcome_for(make_job("a", "fast"))
    assert (outcome.status, outcome.valid, outcome.stages) == ("ok", True, STAGES)
    assert outcome.reward == pytest.approx(0.5 + 0.6)


def test_a_crash_reaches_its_stages_and_earns_the_failure_reward():
    outcome = simulator().outcome_for(make_job("a", "crash"))
    assert (outcome.status, outcome.valid, outcome.score) == ("error", False, None)
    assert outcome.stages == STAGES[:2]
    assert outcome.reward == pytest.approx(-9.8)


def test_an_attempt_over_the_time_limit_is_killed_at_the_limit():
    executor = simulator()
    executor.submit(make_job("s", "slow", time_limit_s=4.0))
    [finished] = executor.wait(None)
    assert executor.now() == 4.0
    assert (finished.outcome.status, finished.outcome.duration_s, finished.outcome.valid) == (
        "timeout",
        4.0,
        False,
    )
    assert finished.outcome.reward < -9


def test_jobs_beyond_capacity_wait_for_a_free_worker():
    executor = simulator(capacity=1)
    executor.submit(make_job("a", "fast"))
    executor.submit(make_job("b", "fast"))
    executor.wait(None)
    executor.wait(None)
    assert (executor.now(), executor.busy_s) == (pytest.approx(2.0), pytest.approx(2.0))


def test_a_cancelled_attempt_is_never_reported_and_frees_its_worker():
    executor = simulator(capacity=1)
    executor.submit(make_job("s", "slow"))
    executor.submit(make_job("f", "fast"))
    executor.cancel("s")
    assert [f.attempt_id for f in executor.wait(None)] == ["f"]
    assert executor.wait(None) == []


def test_restored_simulation_reattaches_running_attempts_at_their_original_start():
    executor = simulator()
    executor.submit(make_job("s", "slow"))
    executor.submit(make_job("f", "fast"))
    executor.wait(None)  # "f" done at t = 1; "s" runs since t = 0
    restored = simulator()
    restored.load_state_dict(executor.state_dict())
    restored.submit(make_job("s", "slow"))
    [finished] = restored.wait(None)
    assert finished.attempt_id == "s"
    assert (restored.now(), restored.busy_s) == (pytest.approx(10.0), pytest.approx(11.0))


def sleeping_runner(response: str, task, work_dir: Path, **options):
    """A stand-in for run_response: sleeps for the seconds named in the task, writes a file, reports."""
    time.sleep(task.sleep_s)
    (work_dir / "ran.txt").write_text(response)
    return SimpleNamespace(
        status="ok", duration_s=task.sleep_s, valid=True, score=1.0, reward=1.0, options=options
    )


def local(tmp_path: Path, capacity: int, runner=sleeping_runner) -> LocalExecutor:
    tasks = {"comp": SimpleNamespace(sleep_s=0.5), "quick": SimpleNamespace(sleep_s=0.0)}
    return LocalExecutor(tasks, capacity, tmp_path / "scratch", instrument=False, runner=runner)


def local_job(attempt_id: str, slug: str = "comp") -> Job:
    job = make_job(attempt_id, "fast")
    return Job(attempt_id, job.sample, slug)


def test_local_executor_runs_attempts_concurrently_in_their_own_scratch_dirs(tmp_path):
    executor = local(tmp_path, capacity=4)
    started = time.monotonic()
    for n in range(4):
        executor.submit(local_job(f"0-{n}"))
    finished = []
    while len(finished) < 4:
        finished += executor.wait(10.0)
    executor.close()
    assert time.monotonic() - started < 1.5  # four 0.5 s attempts at once, not one after another (2 s)
    assert sorted(f.attempt_id for f in finished) == ["0-0", "0-1", "0-2", "0-3"]
    assert (tmp_path / "scratch" / "0-2" / "ran.txt").exists()
    options = finished[0].outcome.options
    assert options["instrument"] is False and isinstance(options["cancel"], threading.Event)


def test_local_executor_reports_a_quick_attempt_before_a_slow_one_finishes(tmp_path):
    executor = local(tmp_path, capacity=2)
    executor.submit(local_job("slow"))
    executor.submit(local_job("quick", slug="quick"))
    first = executor.wait(10.0)
    executor.close()
    assert [f.attempt_id for f in first] == ["quick"]


def test_local_executor_never_starts_a_cancelled_queued_attempt(tmp_path):
    executor = local(tmp_path, capacity=1)
    executor.submit(local_job("first"))
    executor.submit(local_job("second"))
    executor.cancel("second")
    reported = executor.wait(10.0) + executor.wait(1.0)
    executor.close()
    assert [f.attempt_id for f in reported] == ["first"]
    assert not (tmp_path / "scratch" / "second" / "ran.txt").exists()


def test_local_executor_reraises_a_runner_failure_from_wait(tmp_path):
    def broken_runner(response, task, work_dir, **options):
        raise OSError("no sandbox here")

    executor = local(tmp_path, capacity=1, runner=broken_runner)
    executor.submit(local_job("a"))
    with pytest.raises(RuntimeError, match="could not be run"):
        executor.wait(10.0)
    executor.close()


def test_local_executor_clock_is_monotonic_seconds_since_creation(tmp_path):
    executor = local(tmp_path, capacity=1)
    before = executor.now()
    threading.Event().wait(0.05)
    assert executor.now() - before >= 0.05
    executor.close()


WRITE_CONSTANT = """Plan: predict "no" for every row.

```python
import csv

rows = list(csv.DictReader(open("input/test.csv")))
with open("submission/submission.csv", "w") as out:
    out.write("id,y\\n" + "".join(f"{row['id']},no\\n" for row in rows))
print("wrote", len(rows))
```
"""


@pytest.fixture
def tiny_task(tmp_path):
    from rl_core.environment import TaskFiles
    from rl_core.grading import GradingSpec

    public, private = tmp_path / "tiny" / "public", tmp_path / "tiny" / "private"
    public.mkdir(parents=True)
    private.mkdir()
    (public / "train.csv").write_text(
        "id,x,y\n" + "".join(f"{i},{i},{'yes' if i % 4 else 'no'}\n" for i in range(8))
    )
    (public / "test.csv").write_text("id,x\n" + "".join(f"{i},{i}\n" for i in range(8, 12)))
    (private / "answers.csv").write_text("id,y\n8,no\n9,yes\n10,no\n11,yes\n")
    grading = GradingSpec("accuracy", "id", ("y",))
    return TaskFiles("tiny", public, private / "answers.csv", grading, 60, 2048, baseline_score=0.5)


@pytest.mark.slow
def test_local_executor_runs_real_sandboxed_attempts(tiny_task, data_dir):
    executor = LocalExecutor({"tiny": tiny_task}, 2, data_dir / "attempts")
    task = TaskInfo("tiny", "", "accuracy", True, "id", ("y",), 60.0)
    for attempt_id, response in (("0-0", WRITE_CONSTANT), ("0-1", "no code at all")):
        executor.submit(Job(attempt_id, Sample(Prompt(task=task, kind="solve"), response, (0.0,), 0), "tiny"))
    finished = executor.wait(120.0)
    while len(finished) < 2:
        finished += executor.wait(120.0)
    executor.close()
    outcomes = {f.attempt_id: f.outcome for f in finished}
    assert (outcomes["0-0"].valid, outcomes["0-0"].score) == (True, 0.5)
    assert outcomes["0-0"].duration_s > 0
    assert outcomes["0-1"].status == "parse_error"


@pytest.mark.slow
def test_cancelling_a_running_attempt_kills_its_program_at_once(tiny_task, data_dir):
    executor = LocalExecutor({"tiny": tiny_task}, 1, data_dir / "attempts")
    task = TaskInfo("tiny", "", "accuracy", True, "id", ("y",), 60.0)
    forever = "Run forever.\n```python\nimport time\nopen('started', 'w').close()\ntime.sleep(600)\n```"
    executor.submit(Job("0-0", Sample(Prompt(task=task, kind="solve"), forever, (0.0,), 0), "tiny"))
    deadline = time.monotonic() + 30
    while not (data_dir / "attempts" / "0-0" / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    cancelled_at = time.monotonic()
    executor.cancel("0-0")
    executor.close()  # waits for the attempt's thread: it returns once the program is dead
    assert time.monotonic() - cancelled_at < 10  # not the 60 s time limit
    assert executor.wait(0.1) == []  # a cancelled attempt is never reported
