"""Reward sources end to end (issue 28): a `validation` run scores every attempt on a split of the labelled
training table and looks at the hidden answers once, when its chosen program is graded at the end; a
`hidden` run's result is its best score. Real policy, real sandbox, real database; an audit hook records
every file this process opens (the grader runs here, the programs in the sandbox)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from rl_core.testing import opened_files
from webapp.competitions import storage
from webapp.competitions.management.commands.seed_competitions import seed_one
from webapp.runs.models import Run
from workers.run_tasks import validation_dir

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def train(*args) -> dict:
    out = StringIO()
    call_command("train", *args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_a_validation_run_opens_the_hidden_answers_once_in_its_final_grading(iris):
    answers = storage.answers_path("iris-species").resolve()
    with opened_files() as opened:
        summary = train(
            "iris-species", "--attempts", "4", "--actors", "2", "--batch", "2", "--seed", "3",
            "--reward-source", "validation", "--public",
        )  # fmt: skip
    assert opened.count(answers) == 1
    run = Run.objects.get(id=summary["run_id"])
    final = run.attempts.get(prompt_kind="final")
    assert final.answers == "hidden" and final.valid
    assert summary["reward_source"] == "validation" and summary["final_valid"] is True
    assert summary["final_score"] == final.score == run.final_score and run.final_attempt == final
    trained = run.attempts.exclude(prompt_kind="final")
    assert trained.count() == summary["attempts"] == 4 and {a.answers for a in trained} == {"validation"}
    assert final.parent_key == run.best_attempt.key, "the program graded is the best one on validation"
    split_answers = (validation_dir(run.id, "iris-species") / "answers.csv").resolve()
    assert opened.count(split_answers) >= 4, "every training attempt was graded on the split"
    assert_the_pages_say_which_answers_graded_what(run, final)


def assert_the_pages_say_which_answers_graded_what(run: Run, final) -> None:
    client = Client()
    trained = run.attempts.exclude(prompt_kind="final").first()
    page = client.get(reverse("dashboards:attempt", args=[run.id, trained.number])).content.decode()
    assert "Grade on <strong>the validation split</strong>" in page
    page = client.get(reverse("dashboards:attempt", args=[run.id, final.number])).content.decode()
    assert "Grade on <strong>the hidden answers</strong>" in page
    page = client.get(reverse("dashboards:run", args=[run.id])).content.decode()
    assert "validation · clean" in page and 'id="final-grade"' in page
    assert "validation · clean" in client.get(reverse("dashboards:run_list")).content.decode()


def test_a_validation_run_of_a_language_model_never_opens_the_hidden_answers_while_it_trains(
    iris, iris_tiny_model
):
    """The tiny random model writes no valid program, so there is nothing to grade at the end: the hidden
    answers are opened exactly as often as final gradings ran, none."""
    answers = storage.answers_path("iris-species").resolve()
    with opened_files() as opened:
        summary = train(
            "iris-species", "--policy", "lm", "--model", iris_tiny_model, "--attempts", "2", "--actors", "2",
            "--batch", "2", "--max-new-tokens", "16", "--reward-source", "validation",
        )  # fmt: skip
    run = Run.objects.get(id=summary["run_id"])
    finals = run.attempts.filter(prompt_kind="final").count()
    assert opened.count(answers) == finals == 0 and run.status == Run.Status.FINISHED
    assert {a.answers for a in run.attempts.all()} == {"validation"}
    assert summary["final_score"] is None and not summary["final_valid"]


def test_a_hidden_run_stands_by_its_best_score(iris):
    summary = train("iris-species", "--attempts", "2", "--actors", "2", "--batch", "2")
    run = Run.objects.get(id=summary["run_id"])
    assert summary["reward_source"] == "hidden" and summary["final_score"] == run.best_score is not None
    assert (
        run.final_attempt_id == run.best_attempt_id and not run.attempts.filter(prompt_kind="final").exists()
    )
    assert {a.answers for a in run.attempts.all()} == {"hidden"}


def test_a_competition_without_a_labelled_table_refuses_a_validation_run_and_says_why():
    seed_one("digit-images")  # its labels sit beside images/, which a row-level split cannot follow
    with pytest.raises(
        CommandError, match=r"--reward-source: 'digit-images' offers only 'hidden' \(no validation"
    ):
        train("digit-images", "--attempts", "2", "--reward-source", "validation")
    assert not Run.objects.exists(), "a refused run leaves nothing behind"
