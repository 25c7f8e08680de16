"""Executors run attempts and report them as they finish; the actor–learner loop talks only to this protocol.

- `SimulatedExecutor`: a discrete-event simulation. Each action family has a duration distribution and an
  outcome distribution; the simulated clock jumps to the next completion. Deterministic given the seed:
  an attempt's outcome depends only on (seed, attempt id), so a re-dispatched attempt gets the same one.
- `LocalExecutor`: `capacity` worker threads on this machine, each calling
  `rl_core.environment.run_response` (which runs the program in its own sandboxed subprocess).

A CeleryExecutor (each attempt a task on the `sandbox` queue) implements the same protocol elsewhere.
"""

from __future__ import annotations

import heapq
import math
import queue
import random
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rl_core.instrument import STAGES
from rl_core.outcome import AttemptOutcome, OutcomeStatus
from rl_core.policy import Sample
from rl_core.reward import RewardConfig, compute_reward

if TYPE_CHECKING:  # the sandbox is imported only when attempts run
    from rl_core.environment import TaskFiles

RewardFn = Callable[[bool, float | None, int], float]
"""(valid, score or None, number of stages reached) -> reward."""


def paper_reward(valid: bool, score: float | None, stages: int) -> float:
    """rl_core.reward's `paper` preset for a higher-is-better score: the raw score or -10, plus 0.1 a stage.

    >>> paper_reward(True, 0.5, 6), paper_reward(False, None, 2)
    (1.1, -9.8)
    """
    config = RewardConfig(preset="paper")
    return compute_reward(
        valid=valid, score=score, stages_reached=stages, config=config, higher_is_better=True,
        baseline_score=None, perfect_score=1.0,
    )  # fmt: skip


@dataclass(frozen=True)
class Job:
    """One attempt to run: the sampled program and the competition it is for."""

    attempt_id: str
    sample: Sample
    task_slug: str
    lm_markup: str | None = None
    """The instrumenting LM's version of the program (rl_core.instrument.lm_markup, "" when it wrote none),
    attached before dispatch (rl_core.lm_instrumenting); where the program runs it is checked and used, or
    refused for the AST rules' markers. None: the AST rules instrument the program."""
    on_hidden_answers: bool = False
    """Run on the competition's real public data and grade on its hidden answers, in a run whose attempts
    otherwise run on a validation split (`reward_source="validation"`): that run's one final grading."""


@dataclass(frozen=True)
class Finished:
    """A finished attempt and what it did."""

    attempt_id: str
    outcome: AttemptOutcome


class Executor(Protocol):
    """Runs attempts concurrently and reports each as it finishes."""

    capacity: int  # attempts it runs at once; more are queued

    def submit(self, job: Job) -> None:
        """Start (or queue) `job`. Re-submitting an attempt id after a restart re-dispatches it."""
        ...

    def wait(self, timeout_s: float | None) -> list[Finished]:
        """Block until at least one attempt finishes (or `timeout_s` passes: then maybe []); return all that
        have finished by then. Returns [] at once when nothing is in flight."""
        ...

    def cancel(self, attempt_id: str) -> None:
        """Kill the attempt; it will not be reported by `wait`."""
        ...

    def now(self) -> float:
        """Seconds on the executor's clock (simulated, or monotonic since it was created)."""
        ...

    def close(self) -> None:
        """Cancel everything still in flight and release the workers."""
        ...


@dataclass(frozen=True)
class FamilySpec:
    """How one action family behaves in the simulation.

    Attributes:
        median_s: median execution seconds; durations are log-normal around it.
        sigma: log-normal shape (standard deviation of log-duration).
        p_crash: probability that an attempt fails without a valid submission.
        score_mean, score_std: a valid attempt's score is Normal(score_mean, score_std).
        crash_stages: stage counts a crash may reach, drawn uniformly.
        timeout_stages: stages reached by an attempt killed at the time limit.
    """

    median_s: float
    sigma: float = 0.5
    p_crash: float = 0.0
    score_mean: float = 0.0
    score_std: float = 0.0
    crash_stages: tuple[int, ...] = (0,)
    timeout_stages: int = 3


def simulate_attempt(
    spec: FamilySpec, rng: random.Random, time_limit_s: float, reward: RewardFn
) -> AttemptOutcome:
    """Draw one attempt's duration and outcome; an attempt over the limit is killed at it (Δt = limit)."""
    duration_s = rng.lognormvariate(math.log(spec.median_s), spec.sigma)
    crashed = rng.random() < spec.p_crash
    score = rng.gauss(spec.score_mean, spec.score_std)
    if duration_s >= time_limit_s:
        return _failure("timeout", time_limit_s, spec.timeout_stages, reward)
    if crashed:
        return _failure("error", duration_s, rng.choice(spec.crash_stages), reward)
    return _simulated("ok", duration_s, STAGES, score, reward(True, score, len(STAGES)))


def _failure(status: OutcomeStatus, duration_s: float, stages: int, reward: RewardFn) -> AttemptOutcome:
    return _simulated(status, duration_s, STAGES[:stages], None, reward(False, None, stages))


def _simulated(
    status: OutcomeStatus, duration_s: float, stages: tuple[str, ...], score: float | None, reward: float
) -> AttemptOutcome:
    return AttemptOutcome(
        status=status, reward=reward, duration_s=duration_s, stages=stages, valid=score is not None,
        score=score, isolation="simulated",
    )  # fmt: skip


class SimulatedExecutor:
    """A discrete-event simulation of `capacity` workers running attempts of named families.

    Args:
        table: family name -> FamilySpec; a job's family is `job.sample.info["family"]`.
        capacity: attempts run at once; further submissions wait in FIFO order.
        seed: with the attempt id, determines every duration and outcome.
        reward: maps (valid, score, stages reached) to the reward; the `paper` preset by default.
    The time limit is each job's `sample.prompt.task.time_limit_s` (none when it is not positive).
    `busy_s` counts executor-seconds spent running attempts, for utilisation.
    """

    def __init__(
        self, table: Mapping[str, FamilySpec], capacity: int, seed: int, *, reward: RewardFn = paper_reward
    ) -> None:
        self.table = dict(table)
        self.capacity = capacity
        self.seed = seed
        self.reward = reward
        self.busy_s = 0.0
        self._clock = 0.0
        self._seq = 0
        self._running: list[tuple[float, int, str]] = []  # heap of (finish time, seq, attempt id)
        self._queued: deque[str] = deque()
        self._outcomes: dict[str, AttemptOutcome] = {}
        self._started: dict[str, float] = {}
        self._resumed_starts: dict[str, float] = {}

    def outcome_for(self, job: Job) -> AttemptOutcome:
        """The outcome `job` will have; a pure function of (seed, attempt id, family, time limit)."""
        spec = self.table[job.sample.info["family"]]
        limit = job.sample.prompt.task.time_limit_s
        rng = random.Random(f"{self.seed}:{job.attempt_id}")
        return simulate_attempt(spec, rng, limit if limit > 0 else math.inf, self.reward)

    def submit(self, job: Job) -> None:
        self._outcomes[job.attempt_id] = self.outcome_for(job)
        if job.attempt_id in self._resumed_starts:  # it was running when the state was saved
            self._start(job.attempt_id, self._resumed_starts.pop(job.attempt_id))
        elif len(self._running) < self.capacity:
            self._start(job.attempt_id, self._clock)
        else:
            self._queued.append(job.attempt_id)

    def _start(self, attempt_id: str, started_at: float) -> None:
        self._started[attempt_id] = started_at
        finish = started_at + self._outcomes[attempt_id].duration_s
        heapq.heappush(self._running, (finish, self._seq, attempt_id))
        self._seq += 1

    def wait(self, timeout_s: float | None) -> list[Finished]:
        if not self._running:
            return []
        finish = self._running[0][0]
        if timeout_s is not None and finish > self._clock + timeout_s:
            self._clock += timeout_s
            return []
        self._clock = max(self._clock, finish)
        finished = []
        while self._running and self._running[0][0] <= finish:
            finished.append(self._finish(heapq.heappop(self._running)[2]))
        self._start_queued()
        return finished

    def _finish(self, attempt_id: str) -> Finished:
        self.busy_s += self._clock - self._started.pop(attempt_id)
        return Finished(attempt_id, self._outcomes.pop(attempt_id))

    def _start_queued(self) -> None:
        while self._queued and len(self._running) < self.capacity:
            self._start(self._queued.popleft(), self._clock)

    def cancel(self, attempt_id: str) -> None:
        if attempt_id in self._queued:
            self._queued.remove(attempt_id)
        elif attempt_id in self._started:
            self.busy_s += self._clock - self._started.pop(attempt_id)
            self._running = [entry for entry in self._running if entry[2] != attempt_id]
            heapq.heapify(self._running)
            self._start_queued()
        self._outcomes.pop(attempt_id, None)

    def now(self) -> float:
        return self._clock

    def close(self) -> None:
        for attempt_id in [*self._queued, *self._started]:
            self.cancel(attempt_id)

    def state_dict(self) -> dict[str, Any]:
        """The simulated world's clock and which attempts were running since when (plain data).

        After `load_state_dict`, re-submitting those attempts re-attaches them at their original start
        times (an idempotent re-dispatch), so a resumed simulation continues exactly.
        """
        return {"clock": self._clock, "busy_s": self.busy_s, "seq": self._seq, "started": dict(self._started)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self._clock = float(state["clock"])
        self.busy_s = float(state["busy_s"])
        self._seq = int(state["seq"])
        self._resumed_starts = {str(k): float(v) for k, v in state["started"].items()}


class LocalExecutor:
    """`capacity` threads on this machine, each running one attempt through `run_response`.

    Args:
        tasks: competition slug -> rl_core.environment.TaskFiles.
        capacity: attempts run at once (worker threads); the sandbox runs each in its own subprocess.
        scratch_root: each attempt gets a fresh working directory `scratch_root / attempt_id`.
        reward: the RewardConfig passed to run_response (its default when None).
        instrument: insert the progress markers (partial credit) before running.
        runner: what runs one attempt, with run_response's signature (it is passed ``cancel``, an event
            set when the attempt is cancelled); rl_core.environment.run_response when None (imported
            only when the first attempt runs).
        hidden_tasks: slug -> the real competition, for jobs `on_hidden_answers` where `tasks` are
            validation splits (rl_core.validation); None: `tasks` are the real competitions.
    An exception raised by the runner itself (not by the program) is re-raised from `wait`.
    """

    def __init__(
        self,
        tasks: Mapping[str, TaskFiles],
        capacity: int,
        scratch_root: Path,
        *,
        reward: RewardConfig | None = None,
        instrument: bool = True,
        runner: Callable[..., AttemptOutcome] | None = None,
        hidden_tasks: Mapping[str, TaskFiles] | None = None,
    ) -> None:
        self.tasks = dict(tasks)
        self.hidden_tasks = dict(hidden_tasks) if hidden_tasks is not None else self.tasks
        self.capacity = capacity
        self.scratch_root = Path(scratch_root)
        self.options: dict[str, Any] = {"instrument": instrument} | (
            {"reward": reward} if reward is not None else {}
        )
        self.runner = runner
        self._pool = ThreadPoolExecutor(max_workers=capacity, thread_name_prefix="attempt")
        self._done: queue.Queue[tuple[str, AttemptOutcome | None, BaseException | None]] = queue.Queue()
        self._futures: dict[str, Future[None]] = {}
        self._cancelled: set[str] = set()
        self._kill: dict[str, threading.Event] = {}  # attempt id -> the event that kills its program
        self._lock = threading.Lock()
        self._t0 = time.monotonic()

    def submit(self, job: Job) -> None:
        task = (self.hidden_tasks if job.on_hidden_answers else self.tasks)[job.task_slug]
        work_dir = self.scratch_root / job.attempt_id
        shutil.rmtree(work_dir, ignore_errors=True)  # a re-dispatched attempt starts clean
        work_dir.mkdir(parents=True)
        with self._lock:
            self._cancelled.discard(job.attempt_id)
            self._kill[job.attempt_id] = kill = threading.Event()
            self._futures[job.attempt_id] = self._pool.submit(self._run, job, task, work_dir, kill)

    def _run(self, job: Job, task: TaskFiles, work_dir: Path, kill: threading.Event) -> None:
        options = self.options | ({"lm_markup": job.lm_markup} if job.lm_markup is not None else {})
        try:
            outcome = self._runner()(job.sample.response, task, work_dir, cancel=kill, **options)
        except BaseException as exc:  # re-raised in the loop's thread by wait()
            self._done.put((job.attempt_id, None, exc))
            return
        self._done.put((job.attempt_id, outcome, None))

    def _runner(self) -> Callable[..., AttemptOutcome]:
        if self.runner is None:
            from rl_core.environment import run_response  # the sandbox is imported only when attempts run

            self.runner = run_response
        return self.runner

    def wait(self, timeout_s: float | None) -> list[Finished]:
        with self._lock:
            if not self._futures:
                return []
        try:
            arrived = [self._done.get(timeout=timeout_s)]
        except queue.Empty:
            return []
        while not self._done.empty():
            arrived.append(self._done.get_nowait())
        return [finished for item in arrived if (finished := self._accept(*item)) is not None]

    def _accept(
        self, attempt_id: str, outcome: AttemptOutcome | None, error: BaseException | None
    ) -> Finished | None:
        with self._lock:
            self._futures.pop(attempt_id, None)
            self._kill.pop(attempt_id, None)
            if attempt_id in self._cancelled:
                self._cancelled.discard(attempt_id)
                return None
        if error is not None or outcome is None:
            raise RuntimeError(f"Attempt {attempt_id} could not be run by the sandbox.") from error
        return Finished(attempt_id, outcome)

    def cancel(self, attempt_id: str) -> None:
        """Drop the attempt: a queued one never starts; a running one's program is killed at once (the
        runner's ``cancel`` event) and its result discarded."""
        with self._lock:
            future = self._futures.get(attempt_id)
            if future is None:
                return
            if future.cancel():
                self._futures.pop(attempt_id)
                self._kill.pop(attempt_id, None)
            else:
                self._cancelled.add(attempt_id)
                self._kill[attempt_id].set()

    def now(self) -> float:
        return time.monotonic() - self._t0

    def close(self) -> None:
        for attempt_id in list(self._futures):
            self.cancel(attempt_id)
        self._pool.shutdown(wait=True, cancel_futures=True)
