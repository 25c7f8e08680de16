"""Exports: a run's attempts and metrics as CSV and JSON, one attempt as a zip bundle."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from django.urls import reverse

from webapp.runs import services

pytestmark = pytest.mark.django_db


def export(client, run, what, fmt):
    return client.get(reverse("dashboards:run_export", args=[run.id, what, fmt]))


def test_the_attempts_csv_has_one_row_per_attempt_in_order(as_user, owner, run, finish):
    finish(run, score=0.5)
    finish(run, score=None)
    response = export(as_user(owner), run, "attempts", "csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert response["Content-Type"].startswith("text/csv") and "attachment" in response["Content-Disposition"]
    assert [(r["number"], r["valid"], r["score"]) for r in rows] == [("1", "True", "0.5"), ("2", "False", "")]
    assert rows[0]["stages"] == "imports_done;data_loaded;submission_written"


def test_the_attempts_json_carries_the_run_and_its_attempts(as_user, owner, run, finish):
    finish(run, score=0.5)
    document = json.loads(export(as_user(owner), run, "attempts", "json").content)
    assert document["run"]["id"] == run.id and [a["score"] for a in document["attempts"]] == [0.5]


def test_the_metrics_csv_has_a_column_per_metric(as_user, owner, run):
    services.learner_step_record(run_id=run.id, version=1, metrics={"losses/policy": 0.25}, wall_s=2.0)
    services.learner_step_record(run_id=run.id, version=2, metrics={"charts/entropy": 1.5}, wall_s=4.0)
    rows = list(csv.DictReader(io.StringIO(export(as_user(owner), run, "metrics", "csv").content.decode())))
    assert [(r["version"], r["losses/policy"], r["charts/entropy"]) for r in rows] == [
        ("1", "0.25", ""),
        ("2", "", "1.5"),
    ]


def test_the_metrics_json_lists_every_learner_step(as_user, owner, run):
    services.learner_step_record(run_id=run.id, version=1, metrics={"losses/policy": 0.25}, wall_s=2.0)
    document = json.loads(export(as_user(owner), run, "metrics", "json").content)
    assert document["metrics"] == [{"version": 1, "attempts_done": 0, "wall_s": 2.0, "losses/policy": 0.25}]


def test_an_unknown_export_is_not_found(as_user, owner, run):
    assert export(as_user(owner), run, "answers", "csv").status_code == 404


def test_an_attempt_bundle_holds_its_programs_outputs_grade_configuration_and_policy_version(
    as_user, owner, run, finish
):
    attempt = finish(run, score=0.5, program="print('hi')\n")
    response = as_user(owner).get(reverse("dashboards:attempt_bundle", args=[run.id, attempt.number]))
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    folder = f"run-{run.id}-attempt-1/"
    files = {name.removeprefix(folder): archive.read(name).decode() for name in archive.namelist()}
    assert files["program.py"] == "print('hi')\n" and files["instrumented_program.py"].startswith("mark()")
    assert files["stdout.txt"] == "fit\n" and json.loads(files["grade.json"])["score"] == 0.5
    assert json.loads(files["configuration.json"])["attempts"] == 4
    assert json.loads(files["attempt.json"])["policy_version"] == 0


def test_an_attempt_bundle_includes_the_submission_its_program_wrote(as_user, owner, run, finish, data_dir):
    attempt = finish(run, score=0.5)
    submission = data_dir / "runs" / str(run.id) / "attempts" / attempt.key / "submission" / "submission.csv"
    submission.parent.mkdir(parents=True)
    submission.write_text("id,churned\n10,1\n")
    response = as_user(owner).get(reverse("dashboards:attempt_bundle", args=[run.id, attempt.number]))
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    assert archive.read(f"run-{run.id}-attempt-1/submission.csv") == b"id,churned\n10,1\n"
