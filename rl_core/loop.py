"""The asynchronous actor–learner loop of DESIGN.md §3 and its synchronous baseline (the evaluation protocol
is rl_core.evaluation).

Asynchronous (the default): K = `actors` attempts are in flight. Whenever one finishes it is buffered and,
once B = `batch` attempts are buffered, the learner updates on exactly those B; then a replacement is
sampled at once from the newest policy. The loop never waits for stragglers: a slow attempt lands in
whichever batch is being filled when it arrives, tagged with the version that sampled it (its staleness is
recorded, it is never dropped). Synchronous (`sync=True`): sample B, wait for all B, update, repeat.

The learner's update runs in the loop's thread: attempts in flight keep running meanwhile, and the
replacement for the attempt that completed the batch is sampled right after the update. With the background
sampler (`sampler="background"`), an actor left free while the sampler draws does not hold the loop: the
loop goes on receiving (and learning from) finished attempts and looks for new samples every
`SAMPLER_POLL_S`; it waits for the sampler only when no attempt is in flight. (Waiting at once cost an LM run
on 2 cores a whole draw, about 55 s, with a full batch unlearned: bench/lm_throughput.py's timeline.)

Which prompt each attempt gets (solve or improve, from the shared pool or the slot's lineage) is
rl_core.improve_prompts. A new run may seed the pools with known `baselines` (run once each before the first
attempt, `seed_programs`), so improve prompts exist from the first attempt. Attempt ids are
f"{seed}-{n}", so a resumed run re-dispatches exactly the attempts whose results never arrived. Budgets are
exact: `attempts` attempts are run; the last `attempts mod B` results are recorded but not learned from. With
a `wall_budget_s`, no attempt is sampled once the run's wall-clock (on the executor's clock, earlier sessions
included) has reached it; attempts in flight are still awaited and recorded, so the run overshoots by at most
one attempt's duration (an executor whose attempts must end by the deadline can cut their time limits, as
bench/vs_automl.py does), and `attempts` becomes an upper bound.

Checkpoints (every `checkpoint_every` updates, at a point where every reported result has been processed)
hold the policy, learner, loop counters, RNG states, buffer, pools and in-flight jobs, plus the executor's
state when it has one (the simulator), so resuming gives exactly the same next update.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from rl_core import checkpoint as ckpt
from rl_core import improve_prompts as prompts
from rl_core import sampling
from rl_core.executors import Executor, Finished, Job
from rl_core.learner import FrozenLearner, Learner
from rl_core.loop_config import LoopConfig, LoopSummary, NullObserver, Observer
from rl_core.loop_state import LoopState, state_from_dict, state_to_dict
from rl_core.policy import Experience, Policy, Sample, TaskInfo
from rl_core.seed_programs import previous_solutions

SAMPLER_POLL_S = 1.0
"""How often a run whose actor waits for the background sampler looks for new samples, in seconds."""


class _Run:
    """One run of the loop: the objects it drives and its state. Read `run_async` and `run_sync` first."""

    def __init__(
        self,
        policy: Policy,
        learner: Learner | FrozenLearner,
        executor: Executor,
        tasks: Sequence[TaskInfo],
        config: LoopConfig,
        observer: Observer,
        checkpoints: Path | None,
    ) -> None:
        self.policy, self.learner, self.executor = policy, learner, executor
        self.tasks, self.by_slug = list(tasks), {task.slug: task for task in tasks}
        self.config, self.observer, self.checkpoints = config, observer, checkpoints
        self.state = LoopState()
        self.rng = random.Random(config.seed)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.clock0 = executor.now()
        # The background sampler's thread builds prompts under `lock` (the loop's thread changes pools
        # under it); the learner updates under the policy's own `weights_lock`, which the policy holds while
        # it reads its weights (so a policy that samples its own copy lets an update run while it samples).
        self.lock = threading.RLock()
        self.engine: sampling.BackgroundSampler | None = None

    def run_async(self) -> None:
        self.engine = self.background_sampler()
        try:
            self.launch(self.config.actors - len(self.state.in_flight))  # after a resume, some are in flight
            while self.state.in_flight:
                for finished in self.wait(self.sampler_poll_s()):
                    self.receive(finished)
                    if len(self.state.buffer) >= self.config.batch:
                        self.update()
                    self.launch(self.config.actors - len(self.state.in_flight))
                self.launch(self.config.actors - len(self.state.in_flight))  # samples drawn meanwhile
                self.checkpoint_if_due()
        finally:
            if self.engine is not None:
                self.engine.close()

    def background_sampler(self) -> sampling.BackgroundSampler | None:
        """The started sampling thread when `sampler` is "background" (`sample_ahead` > 1, shared pool)."""
        config = self.config
        if config.sampler != "background" or config.sample_ahead <= 1 or config.improve_from == "slots":
            return None
        budget = config.attempts - self.state.submitted
        # One batch ahead: the next draw starts once fewer than a batch (or K) are queued or being drawn, so a
        # sampler slower than the actors never idles while they use up the batch it drew last.
        low = max(config.actors, config.sample_ahead)
        engine = sampling.BackgroundSampler(
            lambda n: self.draw([None] * n), batch=config.sample_ahead, low=low, budget=budget
        )
        engine.start()
        return engine

    def run_sync(self) -> None:
        while self.open_slots() > 0 or self.state.in_flight:
            if not self.state.in_flight:
                self.launch(self.config.batch)
            if not self.state.in_flight:
                break  # the wall budget ran out between the check and the launch
            for finished in self.wait():
                self.receive(finished)
            if not self.state.in_flight and len(self.state.buffer) >= self.config.batch:
                self.update()
                self.checkpoint_if_due()

    def sampler_poll_s(self) -> float | None:
        """How long to wait for an attempt before looking for samples again: a second while an actor is free
        for want of samples the background sampler is still drawing, else as long as it takes (None)."""
        idle = len(self.state.in_flight) < self.config.actors and self.open_slots() > 0
        return SAMPLER_POLL_S if self.engine is not None and idle else None

    def wait(self, timeout_s: float | None = None) -> list[Finished]:
        finished = self.executor.wait(timeout_s)
        if not finished and timeout_s is None:
            raise RuntimeError(
                f"The executor reports nothing running, but {len(self.state.in_flight)} attempts are."
            )
        return finished

    def launch(self, count: int) -> None:
        """Sample and submit up to `count` attempts from the newest policy, within the budget."""
        count = min(count, self.open_slots())
        if count <= 0:
            return
        slots = prompts.free_slots(self.state, self.config.slots, count)
        samples = self.next_samples(slots)
        for slot, sample in zip(slots[: len(samples)], samples, strict=True):
            job = Job(f"{self.config.seed}-{self.state.submitted}", sample, sample.prompt.task.slug)
            self.state.submitted += 1
            self.state.slot_of[job.attempt_id] = slot
            self.state.period_s[job.attempt_id] = prompts.slot_period(
                self.state, self.config, slot, sample.prompt
            )
            self.dispatch(job)

    def next_samples(self, slots: list[int]) -> list[Sample]:
        """One sample per slot: drawn now, or (`sample_ahead` > 1, shared pool) taken from the queue of
        samples drawn ahead, which is first rid of samples staler than `max_staleness` and refilled with a
        batch of `sample_ahead` (never more than the budget has left) when it runs short."""
        if self.engine is not None:  # waits only when nothing runs: else finished attempts wait to be learned
            return self.engine.take(
                len(slots), version=self.policy.version, max_staleness=self.config.max_staleness,
                wait=not self.state.in_flight,
            )  # fmt: skip
        if self.config.sample_ahead <= 1 or self.config.improve_from == "slots":
            return self.draw(slots)
        queue, state = self.state.ahead, self.state
        fresh = sampling.fresh_samples(
            queue, version=self.policy.version, max_staleness=self.config.max_staleness
        )
        state.totals["dropped_stale"] = state.totals.get("dropped_stale", 0.0) + len(queue) - len(fresh)
        left = self.config.attempts - state.submitted - len(fresh)
        taken, state.ahead = sampling.take(fresh, len(slots), batch=self.config.sample_ahead, left=left,
                                           draw=lambda n: self.draw([None] * n))  # fmt: skip
        return taken

    def draw(self, slots: Sequence[int | None]) -> list[Sample]:
        """Sample one prompt per slot from the newest policy in one call (prompts cycle over the tasks),
        recording in each sample's info the call's size (`generation_batch`) and seconds (`generation_s`)."""
        with self.lock:
            tasks = [self.tasks[(self.state.drawn + i) % len(self.tasks)] for i in range(len(slots))]
            chosen = [
                prompts.prompt_for(self.state, self.config, self.rng, task, slot)
                for task, slot in zip(tasks, slots, strict=True)
            ]
            self.state.drawn += len(chosen)
        started = time.perf_counter()
        samples = self.policy.sample(chosen, generator=self.generator)
        elapsed_s = time.perf_counter() - started
        for sample in samples:
            sample.info.update(generation_batch=len(samples), generation_s=elapsed_s)
        return samples

    def open_slots(self) -> int:
        """Attempts the budgets still allow: those left of `attempts`, or 0 once the wall budget is spent."""
        budget_s = self.config.wall_budget_s
        if budget_s is not None and self.wall_s() >= budget_s:
            return 0
        return self.config.attempts - self.state.submitted

    def dispatch(self, job: Job) -> None:
        self.state.in_flight[job.attempt_id] = job
        self.executor.submit(job)
        self.observer.on_attempt_started(job.attempt_id, job.sample, self.executor.now())

    def receive(self, finished: Finished) -> None:
        """Record a finished attempt: buffer it, update totals, pool and best; tell the observer.

        An outcome whose reward is None (status ``lost``: every execution died with its worker) counts
        towards the budget and reaches the observer, but is neither learned from nor counted in the means."""
        job = self.state.in_flight.pop(finished.attempt_id, None)
        if job is None:  # a duplicate report of an attempt already processed
            return
        outcome, sample = finished.outcome, job.sample
        staleness = self.policy.version - sample.policy_version
        slot, period_s = prompts.release_slot(self.state, job.attempt_id, outcome)
        self.state.finished += 1
        if outcome.reward is None:  # lost: its executions kept dying; nothing to learn from
            self.state.totals["lost"] = self.state.totals.get("lost", 0.0) + 1  # older checkpoints lack it
        else:
            experience = Experience(
                sample, float(outcome.reward), float(outcome.duration_s), bool(outcome.valid),
                ran=prompts.ran_something(outcome), slot_period_s=period_s,
            )  # fmt: skip
            self.state.buffer.append(experience)
            self.count(experience, staleness)
        if outcome.valid and outcome.score is not None:
            with self.lock:
                task = self.by_slug[job.task_slug]
                prompts.remember(
                    self.state,
                    self.config.max_pool,
                    task,
                    job,
                    float(outcome.score),
                    outcome.stdout_tail,
                    slot,
                )
        self.observer.on_attempt_finished(
            finished.attempt_id, sample, outcome, self.executor.now(), staleness
        )

    def count(self, experience: Experience, staleness: int) -> None:
        totals = self.state.totals
        totals["reward"] += experience.reward
        totals["valid"] += experience.valid
        totals["duration_s"] += experience.duration_s
        totals["staleness"] += staleness
        totals["staleness_max"] = max(totals["staleness_max"], staleness)

    def seed_pools(self, baselines: Mapping[str, str]) -> None:
        """Run each task's baseline response once (ids f"{seed}-baseline-{n}") and pool the valid ones."""
        responses = {slug: [response] for slug, response in baselines.items() if slug in self.by_slug}
        prefix = f"{self.config.seed}-baseline"
        found = previous_solutions(self.executor, self.tasks, responses, prefix=prefix)
        for slug, entries in found.items():
            for entry in entries:
                prompts.pool_add(self.state, self.config.max_pool, self.by_slug[slug], entry)

    def update(self) -> None:
        batch, self.state.buffer = (
            self.state.buffer[: self.config.batch],
            self.state.buffer[self.config.batch :],
        )
        with self.policy.weights_lock:
            metrics = self.learner.update(batch, current_version=self.policy.version)
        self.state.updates += 1
        metrics |= (
            {
                "loop/attempts_finished": float(self.state.finished),
                "loop/in_flight": float(len(self.state.in_flight)),
                "loop/wall_s": self.wall_s(),
            }
            | self.queue_charts()
            | sampling.sampler_charts(batch)
        )
        self.observer.on_update(self.policy.version, metrics)

    def queue_charts(self) -> dict[str, float]:
        """Samples waiting for an actor, and those dropped as too stale so far."""
        if self.engine is not None:
            return {
                "sampler/queue_depth": float(self.engine.queued()),
                "sampler/dropped_stale": float(self.engine.dropped),
            }
        return {
            "sampler/queue_depth": float(len(self.state.ahead)),
            "sampler/dropped_stale": self.state.totals.get("dropped_stale", 0.0),
        }

    def wall_s(self) -> float:
        return self.state.wall_before_s + self.executor.now() - self.clock0

    def checkpoint_if_due(self) -> None:
        if (
            self.checkpoints is None
            or self.state.updates < self.state.checkpointed_at + self.config.checkpoint_every
        ):
            return
        self.state.checkpointed_at = self.state.updates
        ckpt.save_checkpoint(self.checkpoints, self.state.updates, self.checkpoint_state())

    def checkpoint_final(self) -> None:
        """Save the final policy when updates happened since the last checkpoint (checkpoint_every > 1), so
        a run that starts from this one's final policy gets all of it."""
        if self.checkpoints is not None and self.state.updates > self.state.checkpointed_at:
            self.state.checkpointed_at = self.state.updates
            ckpt.save_checkpoint(self.checkpoints, self.state.updates, self.checkpoint_state())

    def checkpoint_state(self) -> dict[str, Any]:
        with (
            self.lock,
            self.policy.weights_lock,
        ):  # the background sampler neither draws prompts nor samples meanwhile
            return self._checkpoint_state()

    def _checkpoint_state(self) -> dict[str, Any]:
        version, internal, gauss = self.rng.getstate()
        saved = {
            "format": 1,
            "policy": self.policy.state_dict(),
            "policy_version": self.policy.version,
            "learner": self.learner.state_dict(),
            "loop": state_to_dict(self.state) | {"wall_before_s": self.wall_s()},
            "rng": [version, list(internal), gauss],
            "generator": self.generator.get_state(),
        }
        if hasattr(self.executor, "state_dict"):
            saved["executor"] = self.executor.state_dict()
        return saved

    def restore(self, saved: Mapping[str, Any]) -> None:
        """Load a checkpoint, then re-dispatch the attempts whose results never arrived."""
        self.policy.load_state_dict(saved["policy"])
        self.policy.version = int(saved["policy_version"])
        self.learner.load_state_dict(saved["learner"])
        self.state = state_from_dict(saved["loop"], self.by_slug)
        version, numbers, gauss = saved["rng"]
        self.rng.setstate((version, tuple(numbers), gauss))
        self.generator.set_state(saved["generator"])
        if "executor" in saved and hasattr(self.executor, "load_state_dict"):
            self.executor.load_state_dict(saved["executor"])
        self.clock0 = self.executor.now()
        for job in list(self.state.in_flight.values()):
            self.dispatch(job)

    def summary(self) -> LoopSummary:
        totals, lost = self.state.totals, int(self.state.totals.get("lost", 0))
        counted = max(self.state.finished - lost, 1)  # the means are over attempts with a result
        wall_s = self.wall_s()
        capacity_s = self.executor.capacity * wall_s
        return LoopSummary(
            attempts=self.state.finished,
            updates=self.state.updates,
            wall_s=wall_s,
            busy_s=totals["duration_s"],
            utilization=totals["duration_s"] / capacity_s if capacity_s > 0 else 0.0,
            valid_rate=totals["valid"] / counted,
            mean_reward=totals["reward"] / counted,
            mean_duration_s=totals["duration_s"] / counted,
            staleness_mean=totals["staleness"] / counted,
            staleness_max=int(totals["staleness_max"]),
            best_by_task=dict(self.state.best),
            lost=lost,
        )


def run_loop(
    *,
    policy: Policy,
    learner: Learner | FrozenLearner,
    executor: Executor,
    tasks: Sequence[TaskInfo],
    config: LoopConfig,
    observer: Observer | None = None,
    checkpoints: Path | None = None,
    resume: Path | None = None,
    baselines: Mapping[str, str] | None = None,
) -> LoopSummary:
    """Run the actor–learner loop until `config.attempts` attempts (or those sampled within
    `config.wall_budget_s`) have finished.

    Args:
        policy, learner: the learner must have been built on this policy.
        executor: runs the attempts; it is not closed here.
        tasks: the competitions to cycle over (one for a single-task run).
        observer: receives every attempt start, finish and update (the web layer persists through it).
        checkpoints: a directory to write checkpoints to every `config.checkpoint_every` updates.
        resume: a checkpoint file, or a directory whose newest checkpoint to resume from.
        baselines: slug -> a known response (a plan and one ```python block), e.g. the simplest grammar
            program. A new run (not a resumed one: its pools are in the checkpoint) runs each once on the
            executor before its first attempt; a valid one enters its task's improve pool with its output
            and score, so improve prompts exist from the first attempt. These runs are not learned from,
            not reported to the observer and not counted in the budget.
    """
    if not tasks:
        raise ValueError("run_loop needs at least one task.")
    run = _Run(policy, learner, executor, tasks, config, observer or NullObserver(), checkpoints)
    if resume is not None:
        run.restore(ckpt.load_checkpoint(resume))
    elif baselines:
        run.seed_pools(baselines)
    run.run_sync() if config.sync else run.run_async()
    run.checkpoint_final()
    return run.summary()
