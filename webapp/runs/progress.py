"""A terminal progress bar for a run: attempts done, best score, mean reward, executors busy, ETA."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from tqdm import tqdm

if TYPE_CHECKING:  # annotations only: the loop's modules reach torch, which the web process never loads
    from rl_core.loop_config import Observer
    from rl_core.outcome import AttemptOutcome
    from rl_core.policy import Sample


class ProgressObserver:
    """Wraps another loop observer and draws a tqdm bar on stderr as attempts finish."""

    def __init__(self, inner: Observer, *, total: int, capacity: int) -> None:
        self.inner = inner
        self.capacity = capacity
        self.busy = 0
        self.rewards: list[float] = []
        self.best: float | None = None
        self.bar = tqdm(total=total, file=sys.stderr, unit="attempt", dynamic_ncols=True)

    def on_attempt_started(self, attempt_id: str, sample: Sample, started_at: float) -> None:
        self.inner.on_attempt_started(attempt_id, sample, started_at)
        self.busy += 1
        self.refresh()

    def on_attempt_finished(
        self, attempt_id: str, sample: Sample, outcome: AttemptOutcome, finished_at: float, staleness: int
    ) -> None:
        self.busy -= 1
        if outcome.reward is not None:  # a lost attempt has no reward
            self.rewards.append(outcome.reward)
        if outcome.valid and outcome.score is not None:
            higher = sample.prompt.task.higher_is_better
            if self.best is None or (outcome.score > self.best if higher else outcome.score < self.best):
                self.best = outcome.score
        self.refresh()
        self.bar.update(1)
        self.inner.on_attempt_finished(attempt_id, sample, outcome, finished_at, staleness)

    def on_update(self, version: int, metrics: dict[str, float]) -> None:
        self.inner.on_update(version, metrics)

    def refresh(self) -> None:
        mean = sum(self.rewards[-50:]) / len(self.rewards[-50:]) if self.rewards else float("nan")
        best = f"{self.best:.4f}" if self.best is not None else "–"
        self.bar.set_postfix_str(f"best {best}  reward(50) {mean:.3f}  busy {self.busy}/{self.capacity}")

    def close(self) -> None:
        self.bar.close()
