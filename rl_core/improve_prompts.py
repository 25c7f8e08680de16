"""Which prompt each attempt of the loop (rl_core.loop) gets, and the earlier solutions its improve prompts
show: the tasks' shared pools, the slots' lineages, each task's best. Functions over the run's `LoopState`.

Prompts cycle over the tasks (attempt n is for task n mod len(tasks)). Each is "solve" or, with probability
`improve_prob` when there is an earlier valid solution to show, "improve" it. Where that solution comes from
is `improve_from`: "pool" draws it uniformly from the task's shared pool (the best `max_pool` distinct
programs by score); "slots" is the paper's batch slots: each attempt runs in one of S slots (S = K, or B in
the synchronous mode), and a slot's improve prompt continues that slot's own latest valid solution for the
task. In the asynchronous slot mode a slot is clocked by its own attempts, so a slot whose lineage keeps a
slow family completes fewer attempts than one that keeps a fast family (rl_core.advantages says when that is a
bias); each experience whose prompt continued its slot records the slot's period so far (`slot_period_s`: the
mean Δt of the attempts it has finished, the inverse of its completion rate), which is what
rl_core.advantages' slot-rate weights need.
"""

from __future__ import annotations

import functools
import random

from rl_core.executors import Job
from rl_core.loop_config import LoopConfig
from rl_core.loop_state import BestSolution, LoopState
from rl_core.metrics import is_better
from rl_core.outcome import AttemptOutcome
from rl_core.policy import PreviousSolution, Prompt, TaskInfo
from rl_core.responses import program_code


def prompt_for(
    state: LoopState, config: LoopConfig, rng: random.Random, task: TaskInfo, slot: int | None
) -> Prompt:
    """Solve `task`, or (one `rng` draw below `improve_prob`) improve an earlier valid solution of it: the
    slot's latest (`improve_from` "slots") or one drawn from the task's pool."""
    coin = rng.random()
    if config.improve_from == "slots":
        previous = state.lineage.get(f"{slot}:{task.slug}")
        if previous is not None and coin < config.improve_prob:
            return Prompt(task=task, kind="improve", previous=previous)
        return Prompt(task=task, kind="solve")
    pool = state.pool.get(task.slug, [])
    if pool and coin < config.improve_prob:
        return Prompt(task=task, kind="improve", previous=rng.choice(pool))
    return Prompt(task=task, kind="solve")


def remember(
    state: LoopState,
    max_pool: int,
    task: TaskInfo,
    job: Job,
    score: float,
    stdout_tail: str,
    slot: int | None,
) -> None:
    """Add a valid attempt (its `score`, output and id) to its task's improve pool and its slot's lineage;
    track the task's best."""
    better = functools.partial(is_better, higher_is_better=task.higher_is_better)
    best = state.best.get(task.slug)
    if best is None or better(score, best.score):
        state.best[task.slug] = BestSolution(job.attempt_id, score, job.sample.response)
    entry = PreviousSolution(program_code(job.sample.response), stdout_tail, score, job.attempt_id)
    pool_add(state, max_pool, task, entry)
    if slot is not None:
        state.lineage[f"{slot}:{task.slug}"] = entry


def pool_add(state: LoopState, max_pool: int, task: TaskInfo, entry: PreviousSolution) -> None:
    """Put `entry` into the task's improve pool, which keeps the best `max_pool` distinct programs."""
    better = functools.partial(is_better, higher_is_better=task.higher_is_better)
    pool = state.pool.get(task.slug, [])
    same = [p for p in pool if p.code == entry.code]
    if same and not better(entry.score, same[0].score):
        return  # the pool already holds this program with a score at least as good
    pool = sorted([*(p for p in pool if p.code != entry.code), entry], key=lambda p: p.score)
    state.pool[task.slug] = (pool[::-1] if task.higher_is_better else pool)[:max_pool]


def free_slots(state: LoopState, slots: int, count: int) -> list[int]:
    """The `count` lowest slots that no attempt in flight holds. Launches never exceed S (`slots`) minus the
    attempts in flight, so these are below S (the range goes further only so it never runs short)."""
    held = set(state.slot_of.values())
    return [slot for slot in range(slots + count) if slot not in held][:count]


def slot_period(state: LoopState, config: LoopConfig, slot: int, prompt: Prompt) -> float | None:
    """The experience's `slot_period_s` when this prompt continues its slot and the slot is clocked by its
    own attempts (asynchronous slots), else None: the mean Δt of the attempts the slot has finished. That is
    the slot's time from one launch to the next less the sampling in between, which takes about as long in
    every slot; and Δt, unlike a wall-clock reading, is the same number after a resume."""
    continues = config.improve_from == "slots" and prompt.kind == "improve"
    seconds, finished = state.slot_time.get(slot, (0.0, 0))
    if not continues or config.sync or finished == 0:
        return None
    return seconds / finished


def release_slot(
    state: LoopState, attempt_id: str, outcome: AttemptOutcome
) -> tuple[int | None, float | None]:
    """Free the attempt's slot, add its Δt to the slot's time (an attempt that ran nothing freed its slot at
    once: no time), and return (slot, the slot's period at the attempt's launch)."""
    slot = state.slot_of.pop(attempt_id, None)
    if slot is not None:
        seconds, finished = state.slot_time.get(slot, (0.0, 0))
        ran_s = float(outcome.duration_s) if ran_something(outcome) else 0.0
        state.slot_time[slot] = (seconds + ran_s, finished + 1)
    return slot, state.period_s.pop(attempt_id, None)


def ran_something(outcome: AttemptOutcome) -> bool:
    """Whether the attempt ran a program (a response without one, status parse_error, ran nothing)."""
    return outcome.status != "parse_error"
