"""`manage.py train` end to end on a bundled competition: real policy, real sandbox, real database."""

from __future__ import annotations

import json
import threading
import time
from io import StringIO

import pytest
from django.core.management import call_command

from webapp.runs import services
from webapp.runs.config import RunConfig
from webapp.runs.models import Attempt, Run
from workers.dispatch import supervise_in_thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def train(*args) -> dict:
    out = StringIO()
    call_command("train", *args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_a_short_grammar_run_persists_every_attempt_and_learner_step(iris):
    summary = train("iris-species", "--attempts", "4", "--actors", "2", "--batch", "2", "--seed", "3")
    run = Run.objects.get(id=summary["run_id"])
    assert run.status == Run.Status.FINISHED and summary["attempts"] == 4
    attempts = list(run.attempts.all())
    assert len(attempts) == 4 and all(
        a.finished_at and a.program and a.instrumented_program for a in attempts
    )
    assert all(a.isolation in ("bwrap", "rlimits") and a.duration_s > 0 for a in attempts)
    assert run.learner_steps.count() == 2 and run.policy_version == 2
    assert summary["best_attempt_id"] == run.best_attempt_id and summary["best_score"] == run.best_score
    assert set(summary) >= {"run_id", "attempts", "best_score", "best_attempt_id", "valid_rate", "wall_s"}


def test_train_rejects_an_unknown_competition():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no competition called nope") as caught:
        train("nope")
    assert caught.value.returncode == 2


def test_cancelling_a_run_kills_its_attempts_and_marks_it_cancelled(iris, owner):
    config = RunConfig(attempts=50, actors=2, batch=4).to_dict()
    run = services.run_create(owner=owner, competitions=[iris], policy="grammar", config=config)
    worker = threading.Thread(target=supervise_in_thread, args=[run.id])
    worker.start()
    deadline = time.monotonic() + 60
    while not Attempt.objects.filter(run=run).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    services.run_cancel(run_id=run.id)
    worker.join(timeout=120)
    assert not worker.is_alive()
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED
    assert not run.attempts.filter(status=Attempt.Status.RUNNING).exists()
    assert run.attempts.count() < 50


def test_a_run_whose_supervisor_died_writing_its_first_checkpoint_starts_from_the_beginning(iris):
    from webapp import storage
    from webapp.runs.supervisor import run_supervise

    config = RunConfig(attempts=4, actors=2, batch=2).to_dict()
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)
    checkpoints = storage.run_checkpoints(run.id)
    checkpoints.mkdir(parents=True)
    (checkpoints / ".tmp-half-written.pt").write_bytes(b"\x80\x02")  # what a SIGKILL mid-save leaves
    summary = run_supervise(run_id=run.id)
    run.refresh_from_db()
    assert (run.status, summary.attempts, run.attempts_done) == (Run.Status.FINISHED, 4, 4)
