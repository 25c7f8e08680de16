"""`manage.py train` end to end on a bundled competition: real policy, real sandbox, real database."""

from __future__ import annotations

import json
import threading
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from rl_core.run_spec import RunConfig
from webapp.runs import services
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
    sampler = run.learner_steps.first().metrics  # the run page's sampler charts read these
    assert sampler["sampler/generation_batch_mean"] >= 1 and "sampler/queue_depth" in sampler
    assert summary["best_attempt_id"] == run.best_attempt_id and summary["best_score"] == run.best_score
    assert set(summary) >= {"run_id", "attempts", "best_score", "best_attempt_id", "valid_rate", "wall_s"}


def test_a_run_in_slot_mode_with_paper_weights_stores_its_settings_and_finishes(iris):
    summary = train(
        "iris-species", "--attempts", "6", "--actors", "2", "--batch", "2",
        "--improve-from", "slots", "--duration-weighting", "paper",
    )  # fmt: skip
    run = Run.objects.get(id=summary["run_id"])
    assert (run.config["improve_from"], run.config["duration_weighting"]) == ("slots", "paper")
    assert run.status == Run.Status.FINISHED and summary["attempts"] == 6


def test_without_credit_valid_a_valid_attempt_earns_its_score_alone_and_a_failed_one_its_stages(iris):
    summary = train(
        "iris-species", "--attempts", "4", "--actors", "2", "--batch", "2", "--seed", "1",
        "--no-credit-valid", "--credit-per-stage", "5",
    )  # fmt: skip
    run = Run.objects.get(id=summary["run_id"])
    assert run.config["credit_valid"] is False
    attempts = list(run.attempts.all())
    valid = [a for a in attempts if a.valid]
    assert valid and all(a.stages for a in valid)
    assert all(a.reward < 5 for a in valid)  # five stages at 5 each would be 25 on top of the score
    assert all(a.reward == -1.0 + 5 * len(a.stages) for a in attempts if not a.valid)


def test_evaluate_runs_solve_then_improve_with_the_final_policy_and_keeps_the_better(iris):
    summary = train(
        "iris-species", "--attempts", "2", "--actors", "2", "--batch", "2", "--evaluate", "--public"
    )
    run = Run.objects.get(id=summary["run_id"])
    assert summary["attempts"] == 2 and run.attempts_done == 4  # the budget, then the two evaluation attempts
    evaluation = run.attempts.filter(prompt_kind__startswith="eval-").order_by("number")
    solve, improve = evaluation
    assert (solve.prompt_kind, improve.prompt_kind) == ("eval-solve", "eval-improve")  # the grammar is valid
    assert {solve.policy_version, improve.policy_version} == {run.policy_version} and solve.info["evaluation"]
    kept = max((solve, improve), key=lambda a: (a.score, a is solve))  # accuracy: higher; solve on a tie
    expected = {"solve_score": solve.score, "improve_score": improve.score, "score": kept.score}
    assert summary["evaluation"] == {
        "iris-species": expected | {"attempt_id": kept.id, "attempt_number": kept.number}
    }
    assert Client().get(f"/api/runs/{run.id}/").json()["evaluation"] == summary["evaluation"]


def test_a_run_that_is_not_evaluated_reports_no_evaluation(iris):
    summary = train("iris-species", "--attempts", "2", "--actors", "2", "--batch", "2")
    assert summary["evaluation"] == {}
    assert not Attempt.objects.filter(run_id=summary["run_id"], prompt_kind__startswith="eval-").exists()


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
    from workers.driver import run_supervise

    config = RunConfig(attempts=4, actors=2, batch=2).to_dict()
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)
    checkpoints = storage.run_checkpoints(run.id)
    checkpoints.mkdir(parents=True)
    (checkpoints / ".tmp-half-written.pt").write_bytes(b"\x80\x02")  # what a SIGKILL mid-save leaves
    summary = run_supervise(run_id=run.id)
    run.refresh_from_db()
    assert (run.status, summary.attempts, run.attempts_done) == (Run.Status.FINISHED, 4, 4)


def test_train_refuses_an_lm_instrumenter_for_the_grammar_policy_naming_the_option(iris):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--instrumenter: instrumenter 'lm' needs policy 'lm'") as caught:
        train("iris-species", "--instrumenter", "lm")
    assert caught.value.returncode == 2 and not Run.objects.exists()


def test_an_lm_run_trained_with_the_lm_instrumenter_records_which_instrumenter_each_attempt_ran(
    iris_tiny_model,
):
    summary = train(
        "iris-species", "--policy", "lm", "--model", iris_tiny_model, "--instrumenter", "lm",
        "--attempts", "2", "--actors", "2", "--batch", "2", "--max-new-tokens", "16",
    )  # fmt: skip
    run = Run.objects.get(id=summary["run_id"])
    assert run.status == Run.Status.FINISHED and run.config["instrumenter"] == "lm"
    attempts = list(run.attempts.all())
    assert len(attempts) == 2
    # A tiny random LM writes no fenced program (nothing runs: "none"); were there one, its markers would
    # fail the AST check ("lm-fallback"). Never the plain rules' "ast": the run asked for the LM.
    assert all(
        a.instrumentation == ("none" if a.status == "parse_error" else "lm-fallback") for a in attempts
    )
