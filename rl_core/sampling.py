"""Samples drawn ahead of the actors (rl_core.loop, `LoopConfig.sample_ahead` and `LoopConfig.sampler`).

"inline": plain functions over the loop's queue (the loop draws a batch in its own thread when an actor frees
up and the queue is empty; deterministic, checkpointed). "background": `BackgroundSampler`, a thread that
keeps the queue filled while the loop waits on executors, so generation overlaps execution (verl's and
AReaL's asynchronous rollout in small: staleness-bounded, log-probs of the drawing version kept)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from rl_core.policy import Experience, Sample


def fresh_samples(queue: Sequence[Sample], *, version: int, max_staleness: int) -> list[Sample]:
    """The queued samples drawn at most `max_staleness` policy versions before `version`, in order."""
    return [sample for sample in queue if version - sample.policy_version <= max_staleness]


def take(
    queue: list[Sample], count: int, *, batch: int, left: int, draw: Callable[[int], list[Sample]]
) -> tuple[list[Sample], list[Sample]]:
    """(the `count` samples to launch, the queue after): when the queue holds fewer than `count`, it is first
    refilled by one ``draw(n)`` of n = max(`batch`, what is missing) samples, but never more than `left` (the
    attempts the budget has left beyond the queue)."""
    missing = count - len(queue)
    if missing > 0:
        queue = [*queue, *draw(min(max(batch, missing), left))]
    return queue[:count], queue[count:]


def sampler_charts(batch: Sequence[Experience]) -> dict[str, float]:
    """The batch's mean generation-call size and seconds (samples drawn by the loop record both) and, for
    samples that count their tokens (a language model's), tokens per second of generation: each sample's
    new tokens over its share of its call's seconds."""
    drawn = [e.sample.info for e in batch if "generation_batch" in e.sample.info]
    if not drawn:
        return {}
    charts = {
        "sampler/generation_batch_mean": sum(i["generation_batch"] for i in drawn) / len(drawn),
        "sampler/generation_s_mean": sum(i["generation_s"] for i in drawn) / len(drawn),
    }
    counted = [i for i in drawn if "new_tokens" in i]
    share_s = sum(i["generation_s"] / i["generation_batch"] for i in counted)
    if counted and share_s > 0:
        charts["sampler/tokens_per_s"] = sum(i["new_tokens"] for i in counted) / share_s
    return charts


class BackgroundSampler:
    """A sampling thread decoupled from the loop (`LoopConfig.sampler = "background"`).

    It keeps samples drawn ahead in a queue: whenever fewer than `low` are queued or being drawn and the
    budget allows, it draws a batch of `batch` with ``draw(n)`` (which builds the prompts and samples the
    newest policy under the loop's locks), so a language model decodes at the batch size it is fastest at
    while the loop waits on executors. `take` hands samples to actors as they free up, first dropping any
    drawn more than `max_staleness` versions before the policy's current one (their budget is drawn again).

    The budget is exact: `budget` samples may be drawn beyond those handed out (a dropped sample returns its
    share), so queued + being drawn + still to draw never exceeds the attempts the run has left. An error in
    the thread is raised by the next `take`. `close` waits for a draw in progress to finish.
    """

    def __init__(self, draw: Callable[[int], list[Sample]], *, batch: int, low: int, budget: int) -> None:
        self.draw, self.batch, self.low, self.budget = draw, max(1, batch), max(1, low), budget
        self.queue: list[Sample] = []
        self.drawing, self.dropped, self.closed = 0, 0, False
        self.error: BaseException | None = None
        self.changed = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="practicum-sampler", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def take(self, count: int, *, version: int, max_staleness: int, wait: bool = True) -> list[Sample]:
        """The next `count` samples no staler than `max_staleness` (fewer only when the budget has run out),
        waiting for the thread while too few are queued; with `wait` False, those queued now, maybe none."""
        with self.changed:
            while True:
                self._drop_stale(version, max_staleness)
                if self.error is not None:
                    raise RuntimeError("The background sampler failed.") from self.error
                ready = not wait or len(self.queue) >= count or (self.budget == 0 and self.drawing == 0)
                if ready:
                    taken, self.queue = self.queue[:count], self.queue[count:]
                    self.changed.notify_all()
                    return taken
                self.changed.wait()

    def queued(self) -> int:
        with self.changed:
            return len(self.queue)

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()
        if self.thread.is_alive():
            self.thread.join()

    def _drop_stale(self, version: int, max_staleness: int) -> None:
        fresh = fresh_samples(self.queue, version=version, max_staleness=max_staleness)
        stale = len(self.queue) - len(fresh)
        if stale:
            self.queue, self.budget, self.dropped = fresh, self.budget + stale, self.dropped + stale
            self.changed.notify_all()

    def _wanted(self) -> int:
        """Samples to draw now: a batch when the queue runs low, within the budget; else 0."""
        if self.closed or self.error is not None or len(self.queue) + self.drawing >= self.low:
            return 0
        return min(self.batch, self.budget)

    def _run(self) -> None:
        while True:
            with self.changed:
                while not self.closed and self._wanted() == 0:
                    self.changed.wait()
                if self.closed:
                    return
                count = self._wanted()
                self.budget, self.drawing = self.budget - count, count
            try:
                samples = self.draw(count)
            except BaseException as error:  # handed to the loop's thread by take()
                with self.changed:
                    self.error, self.drawing = error, 0
                    self.changed.notify_all()
                return
            with self.changed:
                self.queue.extend(samples)
                self.budget, self.drawing = self.budget + count - len(samples), 0
                self.changed.notify_all()
