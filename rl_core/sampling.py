"""The queue of samples drawn ahead of the actors (rl_core.loop, `LoopConfig.sample_ahead`): plain functions
over a list of samples, so the loop keeps the state and the policy and this module keeps the rules."""

from __future__ import annotations

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
    """The batch's mean generation-call size and seconds (samples drawn by the loop record both)."""
    sizes = [e.sample.info["generation_batch"] for e in batch if "generation_batch" in e.sample.info]
    seconds = [e.sample.info["generation_s"] for e in batch if "generation_s" in e.sample.info]
    if not sizes:
        return {}
    return {
        "sampler/generation_batch_mean": sum(sizes) / len(sizes),
        "sampler/generation_s_mean": sum(seconds) / len(seconds),
    }
