"""Run services: each change commits once, publishes once with the next sequence number, and
duplicate deliveries change nothing."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import IntegrityError, transaction

from rl_core.outcome import AttemptOutcome
from webapp.runs import services
from webapp.runs.events import run_group_name
from webapp.runs.models import Attempt, Run

pytestmark = pytest.mark.django_db(transaction=True)

SAMPLE = {
    "prompt_kind": "solve",
    "family": "random_forest",
    "info": {},
    "response": "plan\n```python\nx\n```",
}
RESULT = {
    "status": "ok", "exit_code": 0, "duration_s": 1.5, "stages": ["imports_done"], "valid": True,
    "score": 0.75, "grade_error": "", "reward": 0.6, "isolation": "bwrap", "stdout_tail": "",
    "stderr_tail": "", "plan": "plan", "program": "x", "instrumented_program": "x", "instrumentation": "ast",
}  # fmt: skip


@pytest.fixture
def listener(run):
    """A real channel-layer listener in the run's group (Redis in the test suite)."""
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(run_group_name(run.id), channel)

    def received():
        messages = []
        while True:
            try:
                message = async_to_sync(_receive_soon)(layer, channel)
            except TimeoutError:
                return messages
            messages.append(message["payload"])

    yield received
    async_to_sync(layer.group_discard)(run_group_name(run.id), channel)


async def _receive_soon(layer, channel):
    import asyncio

    return await asyncio.wait_for(layer.receive(channel), timeout=0.5)


def start(run, key="0-0"):
    return services.attempt_start(
        run_id=run.id, key=key, competition=run.competitions.get(), sample_fields=SAMPLE, policy_version=0
    )


def test_starting_an_attempt_twice_records_one_attempt_and_counts_a_try(run):
    start(run)
    again = start(run)
    assert Attempt.objects.count() == 1 and again.tries == 2


def test_attempts_started_at_once_get_distinct_consecutive_numbers(run):
    """Eight threads, each its own database connection, start attempts of one run at the same moment."""
    from django.db import connection

    barrier, numbers, errors = threading.Barrier(8), [], []

    def start_one(index: int) -> None:
        try:
            barrier.wait()
            numbers.append(start(run, key=f"{index}-0").number)
        except Exception as error:  # reported by the assertion below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=start_one, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and sorted(numbers) == list(range(1, 9))


def test_the_database_refuses_a_second_attempt_with_the_same_number(run):
    first = start(run)
    with pytest.raises(IntegrityError), transaction.atomic():
        Attempt.objects.create(
            run=run, key="other", competition=first.competition, policy_version=0, number=first.number
        )


def test_a_duplicate_result_is_stored_once(run):
    start(run)
    services.attempt_finish(run_id=run.id, key="0-0", outcome=AttemptOutcome.from_dict(RESULT), staleness=1)
    services.attempt_finish(
        run_id=run.id, key="0-0", outcome=AttemptOutcome.from_dict({**RESULT, "score": 0.1}), staleness=3
    )
    run.refresh_from_db()
    assert run.attempts_done == 1 and run.best_score == 0.75
    assert Attempt.objects.get().staleness == 1


def test_nul_characters_from_a_program_or_a_model_are_stored_as_replacement_characters(run):
    """PostgreSQL cannot store NUL in text or jsonb; a program printing one must not fail its run."""
    services.attempt_start(
        run_id=run.id, key="0-0", competition=run.competitions.get(), policy_version=0,
        sample_fields={**SAMPLE, "response": "plan\x00", "info": {"note": "\x00"}},
    )  # fmt: skip
    result = {**RESULT, "stdout_tail": "out\x00put", "stderr_tail": "\x00", "program": "print('\x00')"}
    attempt = services.attempt_finish(
        run_id=run.id, key="0-0", outcome=AttemptOutcome.from_dict(result), staleness=0
    )
    attempt.refresh_from_db()
    assert (attempt.response, attempt.info["note"], attempt.stdout_tail) == (
        "plan\ufffd",
        "\ufffd",
        "out\ufffdput",
    )


def test_the_best_score_follows_the_metric_direction(run):
    for i, score in enumerate([0.5, 0.75, 0.25]):
        start(run, key=f"0-{i}")
        services.attempt_finish(
            run_id=run.id,
            key=f"0-{i}",
            outcome=AttemptOutcome.from_dict({**RESULT, "score": score}),
            staleness=0,
        )
    run.refresh_from_db()
    assert run.best_score == 0.75 and run.best_attempt.key == "0-1"


def test_events_reach_the_channel_layer_after_commit_with_consecutive_seq(run, listener):
    start(run)
    services.attempt_finish(run_id=run.id, key="0-0", outcome=AttemptOutcome.from_dict(RESULT), staleness=0)
    services.learner_step_record(run_id=run.id, version=1, metrics={"losses/policy": 0.1}, wall_s=2.0)
    messages = listener()
    assert [m["type"] for m in messages] == ["attempt", "attempt", "metrics"]
    assert [m["seq"] for m in messages] == [2, 3, 4]  # seq 1 was the run's creation
    assert messages[1]["attempt"]["score"] == 0.75


def test_a_cancelled_run_stays_cancelled(run):
    services.run_cancel(run_id=run.id)
    assert services.run_set_status(run_id=run.id, status=Run.Status.FINISHED).status == Run.Status.CANCELLED


def test_a_learner_step_moves_the_policy_version_only_forward(run):
    services.learner_step_record(run_id=run.id, version=2, metrics={}, wall_s=1.0)
    services.learner_step_record(run_id=run.id, version=2, metrics={"x": 1}, wall_s=1.0)
    run.refresh_from_db()
    assert run.policy_version == 2 and run.learner_steps.count() == 1


def test_an_attempts_event_says_whether_it_improved_the_best_score_so_the_page_need_not_judge(run, listener):
    for i, score in enumerate([0.5, 0.25, 0.75]):  # the run's metric is accuracy: higher is better
        start(run, key=f"0-{i}")
        services.attempt_finish(
            run_id=run.id,
            key=f"0-{i}",
            outcome=AttemptOutcome.from_dict({**RESULT, "score": score}),
            staleness=0,
        )
    finished = [m for m in listener() if m["type"] == "attempt" and m["attempt"]["finished_at"]]
    assert [m["improves_best"] for m in finished] == [True, False, True]
