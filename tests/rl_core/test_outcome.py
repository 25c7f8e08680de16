"""The attempt outcome every layer passes on, and its one JSON form."""

from __future__ import annotations

import json

import pytest

from rl_core.outcome import FIELDS, AttemptOutcome

OUTCOME = AttemptOutcome(
    status="ok", reward=0.8, exit_code=0, duration_s=1.5, stages=("imports_done",), valid=True, score=0.9,
    isolation="bwrap", stdout_tail="out", plan="p", program="print(1)\n", instrumented_program="x",
    instrumentation="ast",
)  # fmt: skip


def test_an_outcome_survives_a_round_trip_through_json():
    assert AttemptOutcome.from_dict(json.loads(json.dumps(OUTCOME.to_dict()))) == OUTCOME


def test_its_plain_form_has_every_field_and_nothing_else():
    assert tuple(OUTCOME.to_dict()) == FIELDS


def test_a_stored_outcome_lacking_fields_or_holding_nulls_takes_the_defaults():
    row = {"status": "error", "reward": -1.0, "duration_s": None, "instrumentation": "", "grade_error": None}
    outcome = AttemptOutcome.from_dict(row | {"key": "0-0"})
    assert (outcome.duration_s, outcome.instrumentation, outcome.stages, outcome.stdout_tail) == (
        0.0, "none", (), "",
    )  # fmt: skip


def test_a_lost_attempt_has_no_reward():
    assert AttemptOutcome.from_dict({"status": "lost"}).reward is None
    with pytest.raises(ValueError, match="lost attempt has no reward"):
        AttemptOutcome(status="lost", reward=-1.0)


def test_an_unknown_status_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="Unknown attempt status 'crashed': expected one of ok, error"):
        AttemptOutcome.from_dict({"status": "crashed", "reward": -1.0})
