"""The actor–learner loop on the simulated executor: timing, prompts, budgets, staleness and exact resume."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from rl_core.checkpoint import load_checkpoint
from rl_core.checkpoint_files import latest_checkpoint
from rl_core.evaluation import EVALUATION, evaluate
from rl_core.executors import FamilySpec, SimulatedExecutor
from rl_core.learner import Learner, LearnerConfig
from rl_core.loop import LoopConfig, run_loop
from rl_core.policies.table import TablePolicy, family_of
from rl_core.policy import TaskInfo

TABLE = {
    "fast": FamilySpec(median_s=1.0, sigma=0.3, score_mean=0.5, score_std=0.05),
    "medium": FamilySpec(median_s=5.0, sigma=0.5, p_crash=0.2, score_mean=0.7, score_std=0.05),
    "crash": FamilySpec(median_s=0.5, sigma=0.3, p_crash=1.0, crash_stages=(0, 1, 2)),
    "straggler": FamilySpec(median_s=1000.0, sigma=0.0, score_mean=0.9),
}


def make_task(slug: str = "comp", time_limit_s: float = 5000.0) -> TaskInfo:
    return TaskInfo(slug, "a task", "accuracy", True, "id", ("y",), time_limit_s)


class Recorder:
    """An observer that remembers every event with the executor's time and its order."""

    def __init__(self, executor: SimulatedExecutor) -> None:
        self.executor = executor
        self.events: list[tuple] = []

    def on_attempt_started(self, attempt_id, sample, started_at):
        self.events.append(("started", attempt_id, started_at, sample))

    def on_attempt_finished(self, attempt_id, sample, outcome, finished_at, staleness):
        self.events.append(("finished", attempt_id, finished_at, sample, outcome, staleness))

    def on_update(self, version, metrics):
        self.events.append(("update", version, self.executor.now(), metrics))

    def of(self, kind: str) -> list[tuple]:
        return [event for event in self.events if event[0] == kind]


def setup(families, *, logits=None, capacity=8, seed=0, keep_bonus=0.0, executor_cls=SimulatedExecutor):
    policy = TablePolicy(families, init_logits=logits, keep_bonus=keep_bonus)
    learner = Learner(policy, LearnerConfig(lr=0.05, seed=seed))
    executor = executor_cls({f: TABLE[f] for f in families}, capacity, seed)
    return policy, learner, executor


def run(families, config: LoopConfig, *, logits=None, tasks=None, **kwargs):
    policy, learner, executor = setup(families, logits=logits)
    recorder = Recorder(executor)
    summary = run_loop(
        policy=policy,
        learner=learner,
        executor=executor,
        tasks=tasks or [make_task()],
        config=config,
        observer=recorder,
        **kwargs,
    )
    return summary, recorder, policy


def test_the_loop_never_waits_for_a_straggler():
    config = LoopConfig(attempts=300, actors=4, batch=8)
    summary, recorder, _ = run(["fast", "straggler"], config, logits=[0.0, -1.0])
    started = {e[1]: e[2] for e in recorder.of("started")}
    stragglers = [e for e in recorder.of("finished") if e[3].info["family"] == "straggler"]
    update_times = [e[2] for e in recorder.of("update")]
    first = stragglers[0]
    assert any(started[first[1]] < t < first[2] for t in update_times)
    assert summary.attempts == 300  # no attempt is dropped for being slow


def test_every_new_attempt_is_sampled_from_the_newest_policy():
    config = LoopConfig(attempts=100, actors=4, batch=8)
    _, recorder, _ = run(["fast", "medium"], config)
    version, versions_seen = 0, set()
    for event in recorder.events:
        if event[0] == "update":
            version = event[1]
        elif event[0] == "started":
            assert event[3].policy_version == version
            versions_seen.add(version)
    assert len(versions_seen) > 5


def test_the_loop_keeps_k_attempts_in_flight_and_never_more():
    config = LoopConfig(attempts=100, actors=4, batch=8)
    _, recorder, _ = run(["fast", "medium"], config)
    in_flight, counts = set(), []
    for event in recorder.events:
        if event[0] == "started":
            in_flight.add(event[1])
            counts.append(len(in_flight))
        elif event[0] == "finished":
            in_flight.discard(event[1])
    assert counts[:4] == [1, 2, 3, 4]
    assert set(counts[4:]) == {4}  # each finished attempt is replaced before anything else is waited for


def test_sync_mode_waits_for_every_attempt_of_a_batch_before_updating():
    config = LoopConfig(attempts=48, actors=4, batch=8, sync=True)
    _, recorder, _ = run(["fast", "straggler"], config, logits=[0.0, -1.0])
    finished_at = {e[1]: e[2] for e in recorder.of("finished")}
    for update_time in (e[2] for e in recorder.of("update")):
        launched_before = [e[1] for e in recorder.of("started") if e[2] < update_time]
        assert all(finished_at[aid] <= update_time for aid in launched_before)
    assert {e[5] for e in recorder.of("finished")} == {0}  # every sample is from the current version


def test_sync_mode_samples_each_batch_from_one_policy_version():
    config = LoopConfig(attempts=32, actors=4, batch=8, sync=True)
    _, recorder, _ = run(["fast", "medium"], config)
    versions = [e[3].policy_version for e in recorder.of("started")]
    assert versions == [v for v in range(4) for _ in range(8)]


def test_improve_prompts_appear_only_once_the_task_has_a_valid_solution():
    config = LoopConfig(attempts=200, actors=4, batch=8, improve_prob=0.5)
    _, recorder, _ = run(["crash", "fast"], config, logits=[3.0, 0.0])
    order = [(e[0], e[1]) for e in recorder.events]
    first_valid = next(i for i, e in enumerate(recorder.events) if e[0] == "finished" and e[4].valid)
    improves = [
        i for i, e in enumerate(recorder.events) if e[0] == "started" and e[3].prompt.kind == "improve"
    ]
    assert improves and min(improves) > first_valid
    previous = {family_of(recorder.events[i][3].prompt.previous.code) for i in improves}
    assert previous == {"fast"}  # only valid solutions are shown
    assert len(order) == len(set(order))


@pytest.mark.parametrize("improve_from", ["pool", "slots"])
def test_an_improve_prompt_names_the_valid_attempt_its_previous_solution_came_from(improve_from):
    config = LoopConfig(attempts=120, actors=4, batch=8, improve_prob=0.5, improve_from=improve_from)
    _, recorder, _ = run(["crash", "fast", "medium"], config)
    finished = {e[1]: e for e in recorder.of("finished")}
    improves = [e[3] for e in recorder.of("started") if e[3].prompt.kind == "improve"]
    assert improves
    for sample in improves:
        parent = finished[sample.prompt.previous.attempt_id]
        assert parent[4].valid and parent[4].score == sample.prompt.previous.score
        assert family_of(parent[3].response) == family_of(sample.prompt.previous.code)


def test_improve_prob_zero_gives_only_solve_prompts():
    config = LoopConfig(attempts=64, actors=4, batch=8, improve_prob=0.0)
    _, recorder, _ = run(["fast", "medium"], config)
    assert {e[3].prompt.kind for e in recorder.of("started")} == {"solve"}


def test_staleness_is_recorded_for_attempts_that_outlive_updates():
    config = LoopConfig(attempts=200, actors=8, batch=8)
    summary, recorder, _ = run(["fast", "medium"], config)
    staleness = [e[5] for e in recorder.of("finished")]
    assert max(staleness) > 0
    assert summary.staleness_max == max(staleness)
    assert max(e[3]["charts/staleness_max"] for e in recorder.of("update")) > 0


def test_the_attempt_budget_is_respected_exactly():
    config = LoopConfig(attempts=37, actors=5, batch=8, seed=7)
    summary, recorder, _ = run(["fast", "medium"], config)
    assert [e[1] for e in recorder.of("started")] == [f"7-{n}" for n in range(37)]
    assert (summary.attempts, summary.updates) == (37, 4)


def test_prompts_cycle_over_the_tasks():
    config = LoopConfig(attempts=12, actors=3, batch=4)
    _, recorder, _ = run(["fast"], config, tasks=[make_task("a"), make_task("b"), make_task("c")])
    assert [e[3].prompt.task.slug for e in recorder.of("started")] == list("abc") * 4


def test_the_summary_reports_the_best_valid_score_and_utilisation():
    config = LoopConfig(attempts=100, actors=8, batch=8)
    summary, recorder, _ = run(["fast", "medium", "crash"], config)
    valid = [e for e in recorder.of("finished") if e[4].valid]
    best = max(valid, key=lambda e: e[4].score)
    assert (summary.best_score, summary.best_attempt_id) == (best[4].score, best[1])
    assert summary.valid_rate == len(valid) / 100
    assert 0.5 < summary.utilization <= 1.0


def resumable_config(sync: bool = False, improve_from: str = "pool", sample_ahead: int = 1) -> LoopConfig:
    return LoopConfig(
        attempts=160,
        actors=6,
        batch=8,
        checkpoint_every=3,
        seed=2,
        sync=sync,
        improve_from=improve_from,  # type: ignore[arg-type]
        sample_ahead=sample_ahead,
    )


class Crash(Exception):
    pass


class CrashAt:
    """An observer that kills the run at one update, as a dying supervisor would."""

    def __init__(self, version: int) -> None:
        self.version = version

    def on_attempt_started(self, *args):
        pass

    def on_attempt_finished(self, *args):
        pass

    def on_update(self, version, metrics):
        if version == self.version:
            raise Crash


def run_resumable(
    tmp_path,
    *,
    observer=None,
    resume=None,
    executor_cls=SimulatedExecutor,
    sync=False,
    improve_from="pool",
    sample_ahead=1,
):
    policy, learner, executor = setup(["fast", "medium", "crash"], seed=1, executor_cls=executor_cls)
    summary = run_loop(
        policy=policy,
        learner=learner,
        executor=executor,
        tasks=[make_task()],
        config=resumable_config(sync, improve_from, sample_ahead),
        observer=observer,
        checkpoints=tmp_path,
        resume=resume,
    )
    return summary, policy, executor


@pytest.mark.parametrize(
    ("improve_from", "sample_ahead"), [("pool", 1), ("slots", 1), ("pool", 5)], ids=["pool", "slots", "ahead"]
)
@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_resuming_from_a_checkpoint_gives_exactly_the_run_without_the_crash(
    tmp_path, sync, improve_from, sample_ahead
):
    modes = {"sync": sync, "improve_from": improve_from, "sample_ahead": sample_ahead}
    straight, straight_policy, _ = run_resumable(tmp_path / "straight", **modes)
    with pytest.raises(Crash):
        run_resumable(tmp_path / "crashed", observer=CrashAt(version=8), **modes)
    assert latest_checkpoint(tmp_path / "crashed").name == "checkpoint-00000006.pt"
    resumed, resumed_policy, _ = run_resumable(tmp_path / "crashed", resume=tmp_path / "crashed", **modes)
    assert torch.equal(resumed_policy.logits, straight_policy.logits)
    assert resumed_policy.version == straight_policy.version
    # the wall-clock is the earlier sessions' plus this one's: equal up to float rounding
    clock = {"wall_s": pytest.approx(straight.wall_s), "utilization": pytest.approx(straight.utilization)}
    assert resumed == dataclasses.replace(straight, **clock)


def test_a_run_ends_with_a_checkpoint_of_its_final_policy(tmp_path):
    summary, policy, _ = run_resumable(tmp_path)  # 20 updates, a checkpoint every 3
    assert summary.updates == 20
    final = load_checkpoint(tmp_path)
    assert latest_checkpoint(tmp_path).name == "checkpoint-00000020.pt"
    assert final["policy_version"] == policy.version


class RecordingSimulator(SimulatedExecutor):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.submitted: list[str] = []

    def submit(self, job):
        self.submitted.append(job.attempt_id)
        super().submit(job)


def test_resuming_redispatches_exactly_the_attempts_whose_results_never_arrived(tmp_path):
    with pytest.raises(Crash):
        run_resumable(tmp_path, observer=CrashAt(version=8))
    saved = load_checkpoint(tmp_path)
    lost = [row[0] for row in saved["loop"]["in_flight"]]
    _, _, executor = run_resumable(tmp_path, resume=tmp_path, executor_cls=RecordingSimulator)
    assert lost and executor.submitted[: len(lost)] == lost
    fresh = [int(aid.split("-")[1]) for aid in executor.submitted[len(lost) :]]
    assert fresh == list(range(saved["loop"]["submitted"], 160))


def test_evaluation_keeps_the_improved_solution_when_it_scores_higher():
    policy = TablePolicy(["fast", "medium"], init_logits=[20.0, 0.0], keep_bonus=-100.0)  # improve switches
    executor = SimulatedExecutor({"fast": TABLE["fast"], "medium": FamilySpec(2.0, score_mean=0.7)}, 1, 0)
    result = evaluate(policy, executor, make_task())
    assert result.solve.score < result.improve.score
    assert result.best is result.improve
    assert family_of(result.best_response) == "medium"


class EventLog:
    def __init__(self):
        self.events: list[tuple] = []

    def on_attempt_started(self, attempt_id, sample, started_at):
        self.events.append(("started", attempt_id, sample.prompt.kind, sample.info.get(EVALUATION)))

    def on_attempt_finished(self, attempt_id, sample, outcome, finished_at, staleness):
        self.events.append(("finished", attempt_id, outcome.score, staleness))

    def on_update(self, version, metrics):
        self.events.append(("update", version))


def test_evaluation_reports_both_attempts_tagged_and_never_updates():
    policy = TablePolicy(["fast", "medium"], init_logits=[20.0, 0.0], keep_bonus=-100.0)
    executor = SimulatedExecutor({"fast": TABLE["fast"], "medium": FamilySpec(2.0, score_mean=0.7)}, 1, 0)
    log = EventLog()
    result = evaluate(policy, executor, make_task(), seed=5, observer=log)
    slug = make_task().slug
    assert log.events == [
        ("started", f"eval-{slug}-5-solve", "solve", True),
        ("finished", f"eval-{slug}-5-solve", result.solve.score, 0),
        ("started", f"eval-{slug}-5-improve", "improve", True),
        ("finished", f"eval-{slug}-5-improve", result.improve.score, 0),
    ]
    assert policy.version == 0


def test_evaluation_does_not_improve_an_invalid_solution():
    policy = TablePolicy(["crash", "fast"], init_logits=[20.0, 0.0])
    executor = SimulatedExecutor({f: TABLE[f] for f in ("crash", "fast")}, 1, 0)
    result = evaluate(policy, executor, make_task())
    assert result.improve is None
    assert result.best is result.solve


class LosingSimulator(SimulatedExecutor):
    """Reports attempt 0-0 as lost (status "lost", reward None), as a Celery executor does after its
    executions kept dying."""

    def wait(self, timeout_s):
        return [self._lose(f) if f.attempt_id == "0-0" else f for f in super().wait(timeout_s)]

    def _lose(self, finished):
        lost = dataclasses.replace(finished.outcome, status="lost", valid=False, score=None, reward=None)
        return dataclasses.replace(finished, outcome=lost)


def test_a_lost_attempt_counts_towards_the_budget_but_is_never_learned_from():
    policy, learner, executor = setup(["fast"], executor_cls=LosingSimulator)
    summary = run_loop(
        policy=policy, learner=learner, executor=executor, tasks=[make_task()],
        config=LoopConfig(attempts=8, actors=2, batch=4),
    )  # fmt: skip
    assert (summary.attempts, summary.lost) == (8, 1)
    assert summary.updates == 1  # 7 attempts with a result fill one batch of 4, not two
    assert summary.valid_rate == 1.0  # the lost attempt is not in the means


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_a_wall_budget_stops_sampling_but_lets_the_attempts_in_flight_finish(sync):
    # Every attempt takes 10 s on 2 workers. Async: waves start at 0, 10, 20, 30 s (< 35). Sync, B = 4:
    # batches start at 0 and 20 s (< 25), each two waves long. Either way 8 attempts, ending at 40 s.
    steady = {"steady": FamilySpec(median_s=10.0, sigma=0.0, score_mean=0.5)}
    policy = TablePolicy(list(steady))
    executor = SimulatedExecutor(steady, 2, 0)
    recorder = Recorder(executor)
    config = LoopConfig(attempts=1000, actors=2, batch=4, sync=sync, wall_budget_s=25.0 if sync else 35.0)
    summary = run_loop(
        policy=policy, learner=Learner(policy, LearnerConfig()), executor=executor, tasks=[make_task()],
        config=config, observer=recorder,
    )  # fmt: skip
    started = [e[2] for e in recorder.of("started")]
    assert max(started) < config.wall_budget_s  # nothing is sampled once the budget is spent
    assert summary.attempts == len(recorder.of("finished")) == 8  # and nothing in flight is dropped
    assert summary.wall_s == pytest.approx(40.0)


def run_slots(*, sync: bool, attempts: int = 200):
    policy, learner, executor = setup(["fast", "medium"], keep_bonus=50.0)
    batches: list = []
    update = learner.update
    learner.update = lambda batch, **kw: (batches.append(list(batch)), update(batch, **kw))[1]  # type: ignore[method-assign]
    recorder = Recorder(executor)
    config = LoopConfig(
        attempts=attempts, actors=4, batch=4, sync=sync, improve_prob=1.0, improve_from="slots"
    )
    run_loop(policy=policy, learner=learner, executor=executor, tasks=[make_task()], config=config,
             observer=recorder)  # fmt: skip
    return recorder, [e for batch in batches for e in batch]


def test_in_slot_mode_an_improve_prompt_continues_its_own_slots_latest_valid_solution():
    recorder, _ = run_slots(sync=False)
    solutions: dict[str, str] = {}  # attempt id -> its program, for the valid ones
    for event in recorder.of("finished"):
        if event[4].valid:
            solutions[event[1]] = event[3].response
    improves = [e[3] for e in recorder.of("started") if e[3].prompt.kind == "improve"]
    assert improves, "improve prompts must appear once slots hold valid solutions"
    # with a keep bonus of 50 a slot never leaves its family, so a slot that continued a foreign lineage
    # would show up as an improve prompt whose family differs from its previous program's
    assert all(family_of(s.prompt.previous.code) == family_of(s.response) for s in improves)
    assert {family_of(s.prompt.previous.code) for s in improves} == {"fast", "medium"}


def test_asynchronous_slot_continuations_carry_their_slots_period():
    _, experiences = run_slots(sync=False)
    continuing = [e for e in experiences if e.sample.prompt.kind == "improve"]
    assert continuing and all(e.slot_period_s is not None for e in continuing)
    assert all(e.slot_period_s is None for e in experiences if e.sample.prompt.kind == "solve")
    # a lineage keeps its family, so its slot's period is that family's (fast ~1 s, medium ~5 s)
    fast = [e.slot_period_s for e in continuing if e.sample.info["family"] == "fast"]
    medium = [e.slot_period_s for e in continuing if e.sample.info["family"] == "medium"]
    assert sum(fast) / len(fast) < sum(medium) / len(medium) / 2


def test_a_slots_period_is_the_time_since_its_first_launch_over_the_attempts_it_finished():
    # one slot, so every continuation's period is the mean Δt of all attempts before it (the simulator
    # samples in no time, so launch to launch is exactly the attempt's Δt)
    policy, learner, executor = setup(["fast", "medium"], keep_bonus=1.0)
    batches: list = []
    update = learner.update
    learner.update = lambda batch, **kw: (batches.append(list(batch)), update(batch, **kw))[1]  # type: ignore[method-assign]
    config = LoopConfig(attempts=40, actors=1, batch=1, improve_prob=1.0, improve_from="slots")
    run_loop(policy=policy, learner=learner, executor=executor, tasks=[make_task()], config=config)
    experiences = [e for batch in batches for e in batch]
    for n, experience in enumerate(experiences):
        before = [e.duration_s for e in experiences[:n]]
        if experience.sample.prompt.kind == "improve":
            assert experience.slot_period_s == pytest.approx(sum(before) / len(before))


def test_synchronous_slots_are_not_clocked_by_their_attempts_so_carry_no_slot_period():
    _, experiences = run_slots(sync=True)
    assert any(e.sample.prompt.kind == "improve" for e in experiences)
    assert all(e.slot_period_s is None for e in experiences)
