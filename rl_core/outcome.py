"""What one attempt did and earned: `AttemptOutcome`, the value every layer passes on (DESIGN.md §1, §4).

rl_core.environment makes one for each attempt it runs; the simulated executor makes them from its
distributions; a sandbox worker (workers.attempts) makes the ones of attempts that never produced their
own (``lost``, unrunnable, stopped at the time limit). The loop learns from them, observers persist them
(webapp.runs.services.attempt_finish), and they travel between worker and supervisor as plain JSON through
the one serialiser pair here, `AttemptOutcome.to_dict` and `AttemptOutcome.from_dict`.

``reward`` is None exactly when nothing can be learned from the attempt: status ``lost`` (every execution
died with its worker: the infrastructure failed, not the program).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from rl_core.instrument import Method

OutcomeStatus = Literal["ok", "error", "timeout", "memory", "killed", "parse_error", "lost"]
"""The sandbox's statuses (rl_core.sandbox.Status), ``parse_error`` when the response had no single Python
block (nothing ran), and ``lost`` when every execution died with its worker (nothing to learn from)."""

STATUSES: tuple[OutcomeStatus, ...] = get_args(OutcomeStatus)
_METHODS: tuple[Method, ...] = get_args(Method)


@dataclass(frozen=True, kw_only=True)
class AttemptOutcome:
    """What one attempt did and earned.

    Attributes:
        status: see `OutcomeStatus`.
        reward: rl_core.reward.compute_reward of the rest; None only for status ``lost``.
        exit_code: the program's exit code (see rl_core.sandbox.ExecutionResult), None if none.
        duration_s: Δt, the program's wall-clock seconds (the limit for a timeout; 0 when nothing ran).
        stages: the stages credited (rl_core.instrument.credited_stages), canonical order.
        valid, score, grade_error: the grader's verdict (grade_error also says why nothing was graded).
        isolation: the sandbox's isolation level (for a parse error: the level it would have run under;
            ``"simulated"`` in the simulator, ``"none"`` when no sandbox ran it).
        stdout_tail, stderr_tail: the ends of the program's output (stage markers never travel there).
        plan: the response's prose plan ("" for run_program).
        program: the program as written; instrumented_program: as run.
        instrumentation: who wrote the program as run (rl_core.instrument.Method): ``"ast"`` (the rules),
            ``"lm"`` (an LM's markers, accepted), ``"lm-fallback"`` (an LM's markers refused or missing: the
            rules'), or ``"none"`` when markers were not inserted.
    """

    status: OutcomeStatus
    reward: float | None
    exit_code: int | None = None
    duration_s: float = 0.0
    stages: tuple[str, ...] = ()
    valid: bool = False
    score: float | None = None
    grade_error: str | None = None
    isolation: str = ""
    stdout_tail: str = ""
    stderr_tail: str = ""
    plan: str = ""
    program: str = ""
    instrumented_program: str = ""
    instrumentation: Method = "none"

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            expected = ", ".join(STATUSES)
            raise ValueError(f"Unknown attempt status {self.status!r}: expected one of {expected}.")
        if self.status == "lost" and self.reward is not None:
            raise ValueError("A lost attempt has no reward (None): nothing ran to earn one.")

    def to_dict(self) -> dict[str, Any]:
        """The outcome as plain JSON data (what an outcome file and a pushed result hold).

        >>> AttemptOutcome(status="lost", reward=None).to_dict()["stages"]
        []
        """
        return dataclasses.asdict(self) | {"stages": list(self.stages)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttemptOutcome:
        """The inverse of `to_dict`. Also reads an Attempt row's fields (workers.attempts) and outcome files
        written before a field existed: a missing or null field takes its default.

        >>> AttemptOutcome.from_dict({"status": "ok", "reward": 1.0, "stages": ["imports_done"]}).stages
        ('imports_done',)
        """
        present = {name: data[name] for name in FIELDS if data.get(name) is not None}
        present.setdefault("reward", None)
        if "stages" in present:
            present["stages"] = tuple(str(stage) for stage in present["stages"])
        if present.get("instrumentation") not in _METHODS:
            present.pop("instrumentation", None)  # a row closed before it was instrumented: blank
        return cls(**present)

    def to_report(self) -> dict[str, Any]:
        """The JSON object ``manage.py execute`` prints (DESIGN.md §7)."""
        return {
            "status": self.status,
            "exit_code": self.exit_code,
            "duration_s": self.duration_s,
            "stages": list(self.stages),
            "valid": self.valid,
            "score": self.score,
            "reward": self.reward,
            "isolation": self.isolation,
            "stdout_tail": self.stdout_tail,
            "stderr_tail": self.stderr_tail,
        }


FIELDS: tuple[str, ...] = tuple(field.name for field in dataclasses.fields(AttemptOutcome))
"""The outcome's field names, each also a column of webapp's Attempt."""
