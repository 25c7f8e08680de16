"""Outcomes as JSON (rl_core.outcome's serialiser), and the outcomes of attempts that never produced one."""

from __future__ import annotations

import json

from rl_core.outcome import AttemptOutcome
from workers.outcomes import lost_outcome, response_digest, unrunnable_outcome

RESPONSE = "Fit a forest.\n```python\nprint(1)\n```\n"


def test_an_outcome_survives_a_round_trip_through_json():
    outcome = AttemptOutcome(
        status="ok", exit_code=0, duration_s=1.5, stages=("imports_done",), valid=True, score=0.9,
        grade_error=None, reward=0.8, isolation="bwrap", stdout_tail="out", stderr_tail="", plan="p",
        program="print(1)\n", instrumented_program="x", instrumentation="ast",
    )  # fmt: skip
    assert AttemptOutcome.from_dict(json.loads(json.dumps(outcome.to_dict()))) == outcome


def test_a_lost_attempt_has_no_reward_to_learn_from():
    outcome = lost_outcome(RESPONSE, "its worker died")
    assert (outcome.status, outcome.reward, outcome.valid, outcome.program) == (
        "lost",
        None,
        False,
        "print(1)\n",
    )


def test_an_unrunnable_attempt_fails_with_its_reason_and_the_failure_reward():
    outcome = unrunnable_outcome(RESPONSE, "files not visible", -1.0)
    assert (outcome.status, outcome.grade_error, outcome.stderr_tail, outcome.reward) == (
        "error", "files not visible", "files not visible", -1.0,
    )  # fmt: skip


def test_different_programs_have_different_digests():
    assert response_digest(RESPONSE) != response_digest(RESPONSE + " ")
