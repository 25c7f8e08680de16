"""What a run of the actor–learner loop (rl_core.loop) must keep to resume exactly: its counters, buffer, jobs
in flight, improve pools, slots and best solutions, and their plain-data form for a checkpoint."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from rl_core import checkpoint as ckpt
from rl_core.executors import Job
from rl_core.policy import Experience, PreviousSolution, Sample, TaskInfo


@dataclass(frozen=True)
class BestSolution:
    attempt_id: str
    score: float
    response: str


_TOTALS = ("reward", "valid", "duration_s", "staleness", "staleness_max", "lost")


@dataclass
class LoopState:
    """Everything about a run that a checkpoint must restore (besides policy, learner and RNGs)."""

    submitted: int = 0
    drawn: int = 0  # prompts drawn so far (prompts cycle over the tasks by this count)
    finished: int = 0
    updates: int = 0
    checkpointed_at: int = 0  # the update count of the newest checkpoint
    buffer: list[Experience] = field(default_factory=list)
    in_flight: dict[str, Job] = field(default_factory=dict)  # in submission order
    pool: dict[str, list[PreviousSolution]] = field(default_factory=dict)
    best: dict[str, BestSolution] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TOTALS, 0.0))
    wall_before_s: float = 0.0  # wall-clock of earlier sessions of this run (before a resume)
    slot_of: dict[str, int] = field(default_factory=dict)  # in-flight attempt id -> the slot it holds
    period_s: dict[str, float | None] = field(default_factory=dict)  # in flight -> its slot_period_s
    slot_time: dict[int, tuple[float, int]] = field(
        default_factory=dict
    )  # slot -> (seconds its attempts ran, attempts it finished)
    lineage: dict[str, PreviousSolution] = field(default_factory=dict)  # f"{slot}:{slug}" -> latest valid
    ahead: list[Sample] = field(
        default_factory=list
    )  # drawn ahead, not launched yet (LoopConfig.sample_ahead)


def state_to_dict(state: LoopState) -> dict[str, Any]:
    structured = ("buffer", "in_flight", "pool", "best", "lineage", "ahead")
    plain = {k: v for k, v in asdict(state).items() if k not in structured}
    return plain | {
        "buffer": [ckpt.experience_to_dict(e) for e in state.buffer],
        "in_flight": [
            [job.attempt_id, ckpt.sample_to_dict(job.sample), job.task_slug]
            for job in state.in_flight.values()
        ],
        "pool": {slug: [ckpt.previous_to_dict(p) for p in entries] for slug, entries in state.pool.items()},
        "best": {slug: asdict(best) for slug, best in state.best.items()},
        "lineage": {key: ckpt.previous_to_dict(p) for key, p in state.lineage.items()},
        "ahead": [ckpt.sample_to_dict(sample) for sample in state.ahead],
    }


def state_from_dict(data: Mapping[str, Any], tasks: Mapping[str, TaskInfo]) -> LoopState:
    jobs = [Job(aid, ckpt.sample_from_dict(sample, tasks), slug) for aid, sample, slug in data["in_flight"]]
    return LoopState(
        submitted=int(data["submitted"]),
        drawn=int(data.get("drawn", data["submitted"])),  # before sampling ahead, every draw was launched
        finished=int(data["finished"]),
        updates=int(data["updates"]),
        checkpointed_at=int(data["checkpointed_at"]),
        buffer=[ckpt.experience_from_dict(e, tasks) for e in data["buffer"]],
        in_flight={job.attempt_id: job for job in jobs},
        pool={slug: [ckpt.previous_from_dict(p) for p in entries] for slug, entries in data["pool"].items()},
        best={slug: BestSolution(**best) for slug, best in data["best"].items()},
        totals={key: float(value) for key, value in data["totals"].items()},
        wall_before_s=float(data["wall_before_s"]),
        # checkpoints written before slots existed lack these: every attempt then held no slot
        slot_of={str(k): int(v) for k, v in data.get("slot_of", {}).items()},
        period_s={str(k): ckpt.optional_float(v) for k, v in data.get("period_s", {}).items()},
        slot_time={int(k): (float(s), int(n)) for k, (s, n) in data.get("slot_time", {}).items()},
        lineage={k: ckpt.previous_from_dict(p) for k, p in data.get("lineage", {}).items()},
        ahead=[ckpt.sample_from_dict(sample, tasks) for sample in data.get("ahead", [])],
    )
