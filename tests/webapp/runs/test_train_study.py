"""`manage.py train --study-seeds N --study-arm ...`: a study driven in the foreground, one run after another,
summarised with each run's counts and the test of the arms; bad input is one line and exit 2."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from webapp.runs.models import Run, Study

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SHORT = ("--attempts", "4", "--actors", "1", "--batch", "2")


def train(*args) -> dict:
    out = StringIO()
    call_command("train", *args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_a_two_seed_two_arm_study_drives_its_four_runs_in_seed_major_order(iris):
    summary = train("iris-species", *SHORT, "--study-seeds", "2", "--study-arm", "static: updates=off",
                    "--study-arm", "rl")  # fmt: skip
    study = Study.objects.get(id=summary["study_id"])
    assert [(r["seed"], r["arm"], r["status"], r["attempts"]) for r in summary["runs"]] == [
        (0, "static", "finished", 4), (0, "rl", "finished", 4),
        (1, "static", "finished", 4), (1, "rl", "finished", 4),
    ]  # fmt: skip
    static = Run.objects.get(id=summary["runs"][0]["run_id"])
    assert set(static.attempts.values_list("policy_version", flat=True)) == {0}, (
        "the static arm never updates"
    )
    assert Run.objects.get(id=summary["runs"][1]["run_id"]).policy_version == 2
    (test,) = summary["tests"]
    assert (test["arm"], test["reference"], test["seeds"]) == ("rl", "static", [0, 1])
    assert study.runs.count() == 4 and all(0 <= r["valid_rate"] <= 1 for r in summary["runs"])


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--study-arm", "static: updates=maybe"), "--study-arm: arm 'static': updates must be on or off"),
        (("--study-seeds", "0"), "--study-seeds: a study has 1 to 20 seeds"),
        (("--study-seeds", "2", "--batch", "0"), "--batch: batch must be positive"),
    ],
)
def test_a_bad_study_is_one_line_and_exit_2_and_stores_nothing(iris, args, words):
    with pytest.raises(CommandError, match=words) as caught:
        train("iris-species", *args)
    assert caught.value.returncode == 2 and not Study.objects.exists() and not Run.objects.exists()
