"""A run page's snapshot agrees with its `seq`: whatever it counts came with an event at or below `seq`,
which the page skips; whatever it leaves out comes with an event above, which the page applies. Checked
against PostgreSQL with an attempt that finishes while a snapshot is half read."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections, transaction

from rl_core.outcome import AttemptOutcome
from webapp.runs import events, selectors, services
from webapp.runs.models import Attempt, Run

pytestmark = pytest.mark.django_db(transaction=True)
SAMPLE = {"prompt_kind": "solve", "family": "knn", "info": {}, "response": ""}
RESULT = {"status": "ok", "exit_code": 0, "duration_s": 1.0, "stages": ["imports_done"], "valid": True,
          "score": 0.5, "reward": 0.5, "program": "x = 1\n"}  # fmt: skip


def snapshot_in_a_thread(run: Run) -> tuple[threading.Thread, dict]:
    """Start `run_snapshot` on its own database connection; the dict gets its result as "snapshot"."""
    out: dict = {}

    def work() -> None:
        try:
            out["snapshot"] = selectors.run_snapshot(run=run)
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    return thread, out


def wait_until_someone_waits_for(table: str, timeout_s: float = 10.0) -> None:
    """Return once another connection waits for a lock on `table` (here: the snapshot, mid-way)."""
    deadline = time.monotonic() + timeout_s
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = %s::regclass", [table]
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.01)
    raise AssertionError(f"nobody waited for {table} within {timeout_s} s")


def test_an_attempt_finishing_while_the_snapshot_is_read_is_left_to_its_event(run):
    if connection.vendor != "postgresql":
        pytest.skip("interleaves two PostgreSQL connections")
    services.attempt_start(
        run_id=run.id, key="0-0", competition=run.competitions.get(), sample_fields=SAMPLE, policy_version=0
    )
    table = Attempt._meta.db_table
    with transaction.atomic():
        # Hold the attempts table, so the snapshot reads its seq, then stops at its first attempts query ...
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        thread, out = snapshot_in_a_thread(run)
        wait_until_someone_waits_for(table)
        # ... and finish the attempt meanwhile: its event commits with the next seq.
        services.attempt_finish(
            run_id=run.id, key="0-0", outcome=AttemptOutcome.from_dict(RESULT), staleness=0
        )
        finish_seq = Run.objects.values_list("event_seq", flat=True).get(id=run.id)
    thread.join(timeout=30)
    snapshot = out["snapshot"]
    assert snapshot["seq"] < finish_seq, "the page will apply the finish event"
    assert snapshot["stats"] == {"finished": 0, "valid": 0, "stages": {}}, "so the snapshot must not count it"
    assert snapshot["best_steps"] == [] and snapshot["attempts"][0]["finished_at"] is None


def test_a_finished_attempt_is_in_the_snapshot_with_its_events_seq(run, finish):
    attempt = finish(run, score=0.5)
    snapshot = selectors.run_snapshot(run=run)
    assert snapshot["seq"] == Run.objects.values_list("event_seq", flat=True).get(id=run.id)
    assert snapshot["stats"]["finished"] == 1 and snapshot["stats"]["valid"] == 1
    assert [a["id"] for a in snapshot["attempts"]] == [attempt.id]


def test_an_events_seq_cannot_be_taken_outside_the_transaction_of_its_change(run):
    with pytest.raises(RuntimeError, match="inside the transaction"):
        events.publish(run.id, "run", {})


def test_the_snapshot_names_the_stages_and_whether_the_run_is_active_so_the_page_keeps_no_list(run):
    from rl_core.instrument import STAGES

    snapshot = selectors.run_snapshot(run=run)
    assert snapshot["stages"] == list(STAGES) and snapshot["run"]["active"] is True
    services.run_cancel(run_id=run.id)
    assert selectors.run_snapshot(run=run)["run"]["active"] is False
