"""The outcomes of attempts that never produced one of their own, and which program an outcome belongs to.
Outcomes travel between workers and the supervisor as plain JSON through rl_core.outcome's serialiser
(`AttemptOutcome.to_dict` / `AttemptOutcome.from_dict`).

- `lost_outcome`: every execution died with its worker (PRACTICUM_MAX_TRIES of them). Status ``lost`` and
  reward None: the infrastructure failed, not the program, so it must not be learned from.
- `unrunnable_outcome`: the worker could not run it at all (it cannot see the competition's files): status
  ``error`` with that reason and the failure reward, as the issue asks ("fails the attempt with that reason").
- `over_time_outcome`: Celery's soft time limit stopped the task before the sandbox reported (the program
  or its grading hung past the sandbox's own limit): status ``timeout``, Δt = that limit (DESIGN.md §2),
  the failure reward.
"""

from __future__ import annotations

import hashlib

from rl_core.outcome import AttemptOutcome, OutcomeStatus
from rl_core.responses import parse_response


def response_digest(response: str) -> str:
    """A short, stable name for one program: which execution an outcome belongs to.

    >>> response_digest("print(1)")
    'd287bb7f9d15abdc'
    """
    return hashlib.sha256(response.encode()).hexdigest()[:16]


def _without_result(
    response: str, *, status: OutcomeStatus, reason: str, reward: float | None, duration_s: float = 0.0
) -> AttemptOutcome:
    parsed = parse_response(response)
    return AttemptOutcome(
        status=status, reward=reward, duration_s=duration_s, grade_error=reason, isolation="none",
        stderr_tail=reason, plan=parsed.plan, program=parsed.code or "",
    )  # fmt: skip


def lost_outcome(response: str, reason: str) -> AttemptOutcome:
    """An attempt given up on after its executions kept dying: status ``lost``, reward None."""
    return _without_result(response, status="lost", reason=reason, reward=None)


def unrunnable_outcome(response: str, reason: str, reward: float) -> AttemptOutcome:
    """An attempt this worker cannot run (`reason` says why): status ``error`` and the failure `reward`."""
    return _without_result(response, status="error", reason=reason, reward=reward)


def over_time_outcome(response: str, reason: str, reward: float, limit_s: float) -> AttemptOutcome:
    """An attempt stopped at its task's time limit `limit_s`: status ``timeout``, Δt = `limit_s`, and the
    failure `reward`; `reason` is its stderr."""
    return _without_result(response, status="timeout", reason=reason, reward=reward, duration_s=limit_s)
