"""A run's final submissions in MLE-bench's layout (`/runs/<id>/export/mlebench.zip`), for MLE-bench's own
grader: submissions.jsonl, `<competition id>/submission.csv`, a README; a 404 that says why when there is
nothing to export; retention never removes the files the export needs."""

from __future__ import annotations

import io
import json
import zipfile
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from webapp import storage
from webapp.competitions.management.commands.seed_competitions import seed_one
from webapp.runs import services
from webapp.runs.models import Run
from webapp.runs.retention import scratch_prune

pytestmark = pytest.mark.django_db


@pytest.fixture
def iris():
    """The bundled iris-species competition, seeded into the test database and data dir."""
    return seed_one("iris-species")


def export(client, run):
    return client.get(reverse("dashboards:run_export_mlebench", args=[run.id]))


def unzip(response) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    return {name: archive.read(name) for name in archive.namelist()}


def write_submission(run, attempt, text: str = "id,churned\n10,1\n"):
    path = storage.attempt_work_dir(run.id, attempt.key) / "submission" / "submission.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_finished_validation_runs_export_holds_its_final_submission_in_mlebenchs_layout(
    iris, owner, client
):
    out = StringIO()
    call_command(
        "train", "iris-species", "--attempts", "4", "--actors", "2", "--batch", "2", "--seed", "3",
        "--reward-source", "validation", "--owner", owner.username, stdout=out, stderr=StringIO(),
    )  # fmt: skip
    run = Run.objects.get(id=json.loads(out.getvalue())["run_id"])
    final = run.attempts.get(prompt_kind="final")
    client.force_login(owner)
    response = export(client, run)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    folder = f"run-{run.id}-mlebench/"
    files = {name.removeprefix(folder): body for name, body in unzip(response).items()}
    assert set(files) == {"submissions.jsonl", "iris-species/submission.csv", "README.txt"}
    lines = [json.loads(line) for line in files["submissions.jsonl"].decode().splitlines()]
    assert lines == [{"competition_id": "iris-species", "submission_path": "iris-species/submission.csv"}]
    written = storage.attempt_work_dir(run.id, final.key) / "submission" / "submission.csv"
    assert files["iris-species/submission.csv"] == written.read_bytes(), "the final grading's file"
    readme = files["README.txt"].decode()
    assert "mlebench grade --submission submissions.jsonl --output-dir grades" in readme
    assert "validation · clean" in readme and "The result counts." in readme


def test_a_hidden_runs_export_holds_its_best_attempts_submission_and_says_it_saw_test_feedback(
    as_user, owner, run, finish
):
    finish(run, score=0.5)
    best = finish(run, score=0.75)
    write_submission(run, best, "id,churned\n10,1\n11,1\n")
    services.run_final_from_best(run_id=run.id)
    files = unzip(export(as_user(owner), run))
    assert files[f"run-{run.id}-mlebench/tiny-churn/submission.csv"] == b"id,churned\n10,1\n11,1\n"
    readme = files[f"run-{run.id}-mlebench/README.txt"].decode()
    assert "test feedback" in readme and "do not count" in readme
    assert f"attempt #{best.number}" in readme and "not imported from MLE-bench" in readme


def test_a_validation_runs_export_never_holds_a_submission_written_for_the_validation_split(
    as_user, owner, validation_run, finish, grade_final
):
    chosen = finish(validation_run, score=0.9)
    write_submission(validation_run, chosen, "id,churned\nvalidation,0\n")
    final = grade_final(validation_run, score=0.5, chosen=chosen)
    write_submission(validation_run, final, "id,churned\n10,1\n")
    files = unzip(export(as_user(owner), validation_run))
    assert files[f"run-{validation_run.id}-mlebench/tiny-churn/submission.csv"] == b"id,churned\n10,1\n"


def test_a_run_without_a_result_has_nothing_to_export_and_says_why(as_user, owner, validation_run, finish):
    finish(validation_run, score=None)
    services.run_set_status(run_id=validation_run.id, status=Run.Status.FINISHED)
    response = export(as_user(owner), validation_run)
    assert response.status_code == 404
    assert "has no result to export" in response.content.decode()
    assert "nothing was graded on the hidden answers" in response.content.decode()


def test_a_result_whose_submission_file_was_pruned_is_a_404_naming_retention(as_user, owner, run, finish):
    finish(run, score=0.5)
    response = export(as_user(owner), run)
    assert response.status_code == 404 and "removed by scratch retention" in response.content.decode()


def test_a_private_runs_export_is_its_owners_and_a_404_to_anyone_else(as_user, owner, stranger, run, finish):
    write_submission(run, finish(run, score=0.5))
    assert export(as_user(owner), run).status_code == 200
    client = as_user(stranger)
    for _ in ("stranger", "anonymous"):
        response = export(client, run)
        assert response.status_code == 404 and b"submission" not in response.content
        client.logout()


def test_retention_keeps_the_final_grading_and_the_result_of_a_finished_run(
    validation_run, finish, grade_final, run
):
    chosen = finish(validation_run, score=0.9)
    other = finish(validation_run, score=0.1)
    final = grade_final(validation_run, score=0.5, chosen=chosen)
    best = finish(run, score=0.75)
    dirs = {
        key: write_submission(r, a).parent.parent
        for key, r, a in (("chosen", validation_run, chosen), ("other", validation_run, other),
                          ("final", validation_run, final), ("best", run, best))
    }  # fmt: skip
    services.run_final_from_best(run_id=run.id)
    for finished in (run, validation_run):
        services.run_set_status(run_id=finished.id, status=Run.Status.FINISHED)
    removed = scratch_prune(keep_days=0, max_total_gb=0)
    assert sorted(removed) == sorted([dirs["chosen"], dirs["other"]])
    assert dirs["final"].is_dir() and dirs["best"].is_dir()
