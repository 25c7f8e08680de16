"""The loop's interface (rl_core.loop): its settings (`LoopConfig`), what a run reports (`LoopSummary`), and
the hooks through which the web layer watches it (`Observer`). Read rl_core.loop's docstring for the loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from rl_core.loop_state import BestSolution
from rl_core.outcome import AttemptOutcome
from rl_core.policy import Sample


@dataclass(frozen=True)
class LoopConfig:
    attempts: int
    """Total attempts to run (the budget), exactly."""
    actors: int = 8
    """K: attempts in flight at once (asynchronous mode)."""
    batch: int = 32
    """B: finished attempts per learner update."""
    sync: bool = False
    """Synchronous baseline: sample B, wait for all B, update."""
    improve_prob: float = 0.5
    """Probability of an improve prompt when the task has an earlier valid solution."""
    checkpoint_every: int = 10
    """Updates between checkpoints (when a checkpoint directory is given)."""
    seed: int = 0
    """Seeds prompt choices and policy sampling; also prefixes attempt ids."""
    max_pool: int = 8
    """Earlier valid solutions kept per task for improve prompts (the best distinct programs by score)."""
    wall_budget_s: float | None = None
    """Stop sampling once the run's wall-clock reaches this many seconds (in-flight attempts still finish);
    None: the attempt budget alone ends the run."""
    improve_from: Literal["pool", "slots"] = "pool"
    """Where an improve prompt's earlier solution comes from: "pool", the task's shared pool; "slots", the
    slot's own latest valid solution (the paper's batch slots; see rl_core.improve_prompts)."""
    sample_ahead: int = 1
    """Prompts per `policy.sample` call. 1: an attempt is sampled when its actor frees up. More (shared
    pool mode only): when an actor frees up and no sample is queued, this many are drawn in one batch from
    the newest policy and handed to actors as they free up, so a language model decodes in batches even
    while actors free one at a time (SmolLM2-135M on 2 CPU cores: 12 tokens/s at batch 1, 43 at batch 8)."""
    max_staleness: int = 1
    """A queued sample drawn more than this many policy versions before it would be launched is dropped
    and drawn again (only with `sample_ahead` > 1; a launched sample's own staleness is never bounded)."""
    sampler: Literal["inline", "background"] = "inline"
    """Who draws the `sample_ahead` batches (asynchronous shared-pool mode): "inline", the loop's thread when
    an actor frees up and the queue is empty (deterministic; the queue is checkpointed); "background", a
    thread that draws the next batch whenever fewer than max(K, `sample_ahead`) samples wait or are being
    drawn (one batch ahead), while the loop waits on executors
    (rl_core.sampling.BackgroundSampler; prompts then see the pool as it is when drawn, so runs are not
    reproducible, and a checkpoint drops the queue)."""

    @property
    def slots(self) -> int:
        """S: the slots attempts run in (K asynchronous, B synchronous)."""
        return self.batch if self.sync else self.actors


@dataclass(frozen=True)
class LoopSummary:
    """What a run did. `utilization` = busy executor-seconds (sum of Δt) / (capacity x wall_s)."""

    attempts: int
    updates: int
    wall_s: float
    busy_s: float
    utilization: float
    valid_rate: float
    mean_reward: float
    mean_duration_s: float
    staleness_mean: float
    staleness_max: int
    best_by_task: dict[str, BestSolution]
    lost: int = 0
    """Attempts given up on (every execution died with its worker): in `attempts`, not in the means."""

    @property
    def best_score(self) -> float | None:
        """The best valid score of a single-task run (None for several tasks or no valid attempt)."""
        return next(iter(self.best_by_task.values())).score if len(self.best_by_task) == 1 else None

    @property
    def best_attempt_id(self) -> str | None:
        return next(iter(self.best_by_task.values())).attempt_id if len(self.best_by_task) == 1 else None


class Observer(Protocol):
    """Hooks through which the web layer persists and publishes a run; times are on the executor's clock.

    on_attempt_started is called again for an attempt re-dispatched after a resume (same attempt id);
    staleness is the number of updates between sampling and finishing; metrics are the learner's plus
    loop/attempts_finished, loop/in_flight and loop/wall_s. An exception raised here stops the run.
    """

    def on_attempt_started(self, attempt_id: str, sample: Sample, started_at: float) -> None: ...

    def on_attempt_finished(
        self, attempt_id: str, sample: Sample, outcome: AttemptOutcome, finished_at: float, staleness: int
    ) -> None: ...

    def on_update(self, version: int, metrics: dict[str, float]) -> None: ...


class NullObserver:
    def on_attempt_started(self, attempt_id: str, sample: Sample, started_at: float) -> None:
        pass

    def on_attempt_finished(
        self, attempt_id: str, sample: Sample, outcome: AttemptOutcome, finished_at: float, staleness: int
    ) -> None:
        pass

    def on_update(self, version: int, metrics: dict[str, float]) -> None:
        pass
