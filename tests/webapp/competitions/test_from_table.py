"""A competition from one labelled table: what Practicum proposes, how it splits, what it writes, and the
command that stores it (real PostgreSQL for that), with one-sentence errors that store nothing. The pages
are tested in test_table_views.py."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import table_penguins  # shared with test_table_views.py (on sys.path: conftest.py)
from django.core.management import call_command
from django.core.management.base import CommandError

from rl_core.grading import GradingSpec, grade_submission
from webapp.competitions import storage
from webapp.competitions.importing.bundles import validate_bundle
from webapp.competitions.models import Competition
from webapp.competitions.tables.bundle import split, write_bundle
from webapp.competitions.tables.proposal import (
    Choices,
    TableError,
    check_choices,
    fitting_metrics,
    propose,
    read_table,
)
from webapp.competitions.tables.services import DRAFT_KEEP_S, drafts_expire

N_ROWS, penguins = table_penguins.N_ROWS, table_penguins.penguins


def table_of(tmp_path: Path, frame: pd.DataFrame, name: str = "penguins.csv"):
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return read_table(path)


def written_bundle(tmp_path: Path, frame: pd.DataFrame, **choices):
    table = table_of(tmp_path, frame)
    plan = check_choices(table, Choices(**{**vars(propose(table)), **choices}))
    written = write_bundle(table, plan, tmp_path / "bundle", slug="penguins", name="Penguins")
    return tmp_path / "bundle", plan, written


# -- proposals -------------------------------------------------------------------------------------------


def test_it_proposes_the_unique_id_column_the_last_column_and_log_loss_for_three_classes(tmp_path):
    assert propose(table_of(tmp_path, penguins())) == Choices("PassengerId", ("species",), "log_loss", 0.2)


def test_a_column_named_like_a_target_wins_over_the_last_column(tmp_path):
    frame = penguins().rename(columns={"sex": "label"})
    assert propose(table_of(tmp_path, frame)).target_columns == ("label",)


def test_an_id_column_with_duplicates_is_not_proposed_and_an_id_is_generated(tmp_path):
    frame = penguins().rename(columns={"PassengerId": "id"})
    frame.loc[1, "id"] = frame.loc[0, "id"]
    table = table_of(tmp_path, frame)
    assert propose(table).id_column is None
    plan = check_choices(table, propose(table))
    assert plan.id_column == "row_id", "the table's own 'id' keeps its name; the generated one takes another"


@pytest.mark.parametrize(
    "target,metric",
    [("sex", "roc_auc"), ("species", "log_loss"), ("body_mass_g", "rmse"), ("twelve", "accuracy")],
)
def test_the_metric_fits_the_kind_of_target(tmp_path, target, metric):
    frame = penguins().assign(twelve=np.arange(N_ROWS) % 12)
    table = table_of(tmp_path, frame[[c for c in frame.columns if c != target] + [target]])
    assert propose(table).metric == metric


def test_several_zero_one_targets_are_graded_columnwise_and_several_numbers_by_rmse(tmp_path):
    frame = penguins().assign(a=np.arange(N_ROWS) % 2, b=np.arange(N_ROWS) // 30)
    table = table_of(tmp_path, frame)
    assert "mean_columnwise_roc_auc" in fitting_metrics(table.frame, ("a", "b"))
    assert "rmse" in fitting_metrics(table.frame, ("bill_mm", "body_mass_g"))
    assert fitting_metrics(table.frame, ("species", "bill_mm")) == []


def test_json_records_and_json_lines_read_as_the_same_table_as_csv(tmp_path):
    frame = penguins()
    records = frame.to_dict(orient="records")
    (tmp_path / "t.json").write_text(json.dumps(records))
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    csv = table_of(tmp_path, frame).frame
    pd.testing.assert_frame_equal(read_table(tmp_path / "t.json").frame, csv)
    pd.testing.assert_frame_equal(read_table(tmp_path / "t.jsonl").frame, csv)


def test_nested_json_becomes_dotted_columns(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps([{"id": 1, "x": {"a": 2, "b": None}, "tags": [1, 2]}]))
    frame = read_table(tmp_path / "t.json").frame
    assert frame.to_dict(orient="records") == [{"id": "1", "tags": "[1, 2]", "x.a": "2", "x.b": ""}]


# -- errors ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,content,expected",
    [
        ("t.csv", "", "t.csv: the file is empty."),
        ("t.csv", "a,b\n1,2,3,4\n", "t.csv: not a readable CSV file"),
        ("t.json", "[{]", "t.json: not readable JSON"),
        ("t.json", '{"a": 1}', "t.json: expected a JSON list of records"),
        ("t.jsonl", '{"a": 1}\nnope\n', "t.jsonl: line 2 is not readable JSON"),
        ("t.csv", "a,b\n", "t.csv: the table has columns but no rows."),
    ],
)
def test_an_unreadable_table_is_refused_in_one_sentence_naming_the_file(tmp_path, name, content, expected):
    (tmp_path / name).write_text(content)
    with pytest.raises(TableError) as caught:
        read_table(tmp_path / name)
    assert str(caught.value).startswith(expected) and str(caught.value).count(". ") == 0


def choice_error(tmp_path, frame: pd.DataFrame, **choices) -> str:
    table = table_of(tmp_path, frame)
    with pytest.raises(TableError) as caught:
        check_choices(table, Choices(**{**vars(propose(table)), **choices}))
    return str(caught.value)


def test_a_target_with_missing_values_is_refused(tmp_path):
    frame = penguins()
    frame.loc[[3, 7], "species"] = ""
    assert choice_error(tmp_path, frame) == (
        "penguins.csv: the target column 'species' has 2 missing values (rows 4, 8)."
    )


def test_too_few_rows_are_refused(tmp_path):
    message = choice_error(tmp_path, penguins(n=12))
    assert message == "penguins.csv: has 12 rows; a competition needs at least 20."


def test_an_id_column_with_duplicates_is_refused(tmp_path):
    frame = penguins().assign(island_id=lambda f: f["island"])
    message = choice_error(tmp_path, frame, id_column="island_id", target_columns=("species",))
    assert message.startswith("penguins.csv: the id column 'island_id' has duplicates ('")


@pytest.mark.parametrize(
    "target,metric,expected",
    [
        ("body_mass_g", "accuracy", "does not fit a target of numbers (a regression target)"),
        ("species", "rmse", "needs numbers, and 'species' holds text"),
        ("species", "roc_auc", "does not fit a target of more than two classes"),
        ("sex", "f1", "needs the labels 0 and 1"),
        ("species", "jaccard", "is not offered for a table"),
    ],
)
def test_a_metric_that_does_not_fit_the_target_is_refused(tmp_path, target, metric, expected):
    message = choice_error(tmp_path, penguins(), target_columns=(target,), metric=metric)
    assert message == f"penguins.csv: the metric {metric!r} {expected} ({target})."


def test_a_class_with_one_row_cannot_be_stratified(tmp_path):
    frame = penguins()
    frame.loc[0, "species"] = "Emperor"
    assert "the class 'Emperor' of 'species' has a single row" in choice_error(tmp_path, frame)


# -- the split and the files -----------------------------------------------------------------------------


def test_the_split_is_seeded_stratified_and_sized_as_proposed(tmp_path):
    table = table_of(tmp_path, penguins())
    plan = check_choices(table, propose(table))
    train, test = split(table, plan)
    _, again_test = split(table, plan)
    assert list(test["PassengerId"]) == list(again_test["PassengerId"]), "the same seed, the same split"
    assert (len(train), len(test)) == (48, 12)
    assert test["species"].value_counts().to_dict() == {"Adelie": 4, "Chinstrap": 4, "Gentoo": 4}
    assert not set(train["PassengerId"]) & set(test["PassengerId"])


def test_a_generated_id_is_a_shuffled_range_shared_by_test_and_answers(tmp_path):
    frame = penguins().drop(columns="PassengerId")
    bundle, plan, _ = written_bundle(tmp_path, frame)
    train = pd.read_csv(bundle / "public" / "train.csv")
    test = pd.read_csv(bundle / "public" / "test.csv")
    answers = pd.read_csv(bundle / "private" / "answers.csv")
    assert plan.id_column == "id" and sorted([*train["id"], *test["id"]]) == list(range(1, N_ROWS + 1))
    assert list(train["id"]) != list(range(1, 49)), "the ids do not follow the table's row order"
    assert list(answers["id"]) == list(test["id"])


def test_the_hidden_answers_never_reach_the_public_files(tmp_path):
    bundle, _, written = written_bundle(tmp_path, penguins())
    test = pd.read_csv(bundle / "public" / "test.csv")
    assert "species" not in test.columns and not set(written.graded_columns) & set(test.columns)
    assert sorted(p.name for p in (bundle / "public").iterdir()) == [
        "sample_submission.csv",
        "test.csv",
        "train.csv",
    ]
    train_ids = set(pd.read_csv(bundle / "public" / "train.csv")["PassengerId"])
    assert not train_ids & set(pd.read_csv(bundle / "private" / "answers.csv")["PassengerId"])


def test_three_classes_under_log_loss_are_one_hot_answers_and_prior_probabilities(tmp_path):
    bundle, _, written = written_bundle(tmp_path, penguins())
    columns = ("species_Adelie", "species_Chinstrap", "species_Gentoo")
    assert written.graded_columns == columns
    answers = pd.read_csv(bundle / "private" / "answers.csv")
    assert (answers[list(columns)].sum(axis=1) == 1).all()
    sample = pd.read_csv(bundle / "public" / "sample_submission.csv")
    assert sample[list(columns)].iloc[0].tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    assert validate_bundle(bundle).baseline_score == pytest.approx(np.log(3))


def test_two_text_classes_under_roc_auc_are_graded_as_the_probability_of_the_last_one(tmp_path):
    bundle, _, written = written_bundle(tmp_path, penguins(), target_columns=("sex",), metric="roc_auc")
    assert written.graded_columns == ("sex_male",)
    answers = pd.read_csv(bundle / "private" / "answers.csv")
    test = pd.read_csv(bundle / "public" / "test.csv")
    original = penguins().set_index("PassengerId").loc[test["PassengerId"], "sex"]
    assert answers["sex_male"].tolist() == (original == "male").astype(int).tolist()
    assert validate_bundle(bundle).baseline_score == 0.5


def test_a_regression_bundle_validates_and_its_sample_predicts_the_training_mean(tmp_path):
    bundle, _, _ = written_bundle(tmp_path, penguins(), target_columns=("body_mass_g",), metric="mae")
    train = pd.read_csv(bundle / "public" / "train.csv")
    sample = pd.read_csv(bundle / "public" / "sample_submission.csv")
    assert sample["body_mass_g"].iloc[0] == pytest.approx(train["body_mass_g"].mean())
    assert validate_bundle(bundle).spec.metric == "mae"


# -- the command (PostgreSQL) ----------------------------------------------------------------------------


def run_command(*args) -> dict:
    out = io.StringIO()
    call_command("competition_from_table", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_the_command_makes_a_competition_whose_sample_grades_and_whose_answers_stay_private(tmp_path, owner):
    penguins().to_csv(tmp_path / "penguins.csv", index=False)
    result = run_command(str(tmp_path / "penguins.csv"), "--slug", "penguins", "--owner", "alice")
    assert result == {
        "slug": "penguins",
        "metric": "log_loss",
        "id_column": "PassengerId",
        "target_columns": ["species_Adelie", "species_Chinstrap", "species_Gentoo"],
        "train_rows": 48,
        "test_rows": 12,
    }
    competition = Competition.objects.get(slug="penguins")
    assert competition.owner == owner and competition.baseline_score == pytest.approx(np.log(3))
    public = storage.public_dir("penguins")
    spec = GradingSpec(competition.metric, competition.id_column, tuple(competition.target_columns))
    grade = grade_submission(public / "sample_submission.csv", storage.answers_path("penguins"), spec)
    assert grade.valid and grade.score == pytest.approx(np.log(3))
    answers = storage.answers_path("penguins").read_text()
    assert all(answers not in p.read_text() for p in public.iterdir())
    assert "species" not in pd.read_csv(public / "test.csv").columns


@pytest.mark.django_db
def test_the_command_takes_a_target_metric_and_test_fraction(tmp_path):
    penguins().to_csv(tmp_path / "p.csv", index=False)
    result = run_command(
        str(tmp_path / "p.csv"), "--slug", "mass", "--target", "body_mass_g", "--metric", "mae",
        "--test-fraction", "0.25",
    )  # fmt: skip
    assert (result["metric"], result["target_columns"], result["test_rows"]) == ("mae", ["body_mass_g"], 15)


@pytest.mark.django_db
def test_the_command_exits_2_naming_the_problem_and_stores_nothing(tmp_path, data_dir):
    frame = penguins()
    frame.loc[5, "species"] = ""
    frame.to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(CommandError) as caught:
        run_command(str(tmp_path / "p.csv"), "--slug", "penguins")
    assert caught.value.returncode == 2
    assert str(caught.value) == "p.csv: the target column 'species' has 1 missing values (rows 6)."
    assert not Competition.objects.exists() and not storage.competition_dir("penguins").exists()
    assert not list((data_dir / "staging").glob("*")) if (data_dir / "staging").exists() else True


@pytest.mark.django_db
def test_the_command_refuses_a_taken_slug(tmp_path):
    penguins().to_csv(tmp_path / "p.csv", index=False)
    run_command(str(tmp_path / "p.csv"), "--slug", "penguins")
    with pytest.raises(CommandError, match="The slug 'penguins' is already taken"):
        run_command(str(tmp_path / "p.csv"), "--slug", "penguins")
    assert Competition.objects.count() == 1


@pytest.mark.django_db
def test_the_command_reads_json_lines_and_generates_an_id(tmp_path):
    records = penguins().drop(columns="PassengerId").to_dict(orient="records")
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    result = run_command(str(tmp_path / "p.jsonl"), "--slug", "penguins", "--target", "sex")
    assert (result["id_column"], result["metric"], result["target_columns"]) == (
        "id",
        "roc_auc",
        ["sex_male"],
    )


def test_drafts_nobody_finished_within_a_day_are_removed(data_dir):
    old, fresh = data_dir / "table_drafts" / ("a" * 32), data_dir / "table_drafts" / ("b" * 32)
    old.mkdir(parents=True)
    fresh.mkdir()
    os.utime(old, (time.time() - DRAFT_KEEP_S - 60,) * 2)
    drafts_expire()
    assert not old.exists() and fresh.exists()
