"""rl_core.grading: what makes a submission valid, the sentence an invalid one gets, and how it is scored."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rl_core.grading import Grade, GradingSpec, grade_frames, grade_submission
from rl_core.metrics import UnknownMetricError

RMSE = GradingSpec("rmse", "id", ("y",))
ACCURACY = GradingSpec("accuracy", "id", ("species",))
AUC = GradingSpec("roc_auc", "id", ("p",))


@pytest.fixture
def answers() -> pd.DataFrame:
    return pd.DataFrame({"id": [1, 2, 3, 4], "y": [1.0, 2.0, 3.0, 4.0]})


@pytest.fixture
def penguins() -> pd.DataFrame:
    return pd.DataFrame({"id": ["a", "b", "c", "d"], "species": ["Adelie", "Gentoo", "Chinstrap", "Adelie"]})


@pytest.fixture
def answers_csv(tmp_path, answers):
    path = tmp_path / "answers.csv"
    answers.to_csv(path, index=False)
    return path


def write(tmp_path, content: str | bytes, name: str = "submission.csv"):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def error_of(submission: pd.DataFrame, answers: pd.DataFrame, spec: GradingSpec = RMSE) -> str:
    grade = grade_frames(submission, answers, spec)
    assert not grade.valid and grade.score is None
    return grade.error


# -- scoring -------------------------------------------------------------------------------------------------


def test_it_scores_a_valid_submission_with_the_metric(answers):
    submission = answers.assign(y=[1.0, 2.0, 3.0, 6.0])
    assert grade_frames(submission, answers, RMSE) == Grade(valid=True, score=1.0, error=None)


def test_its_scores_are_plain_python_floats(answers):
    assert type(grade_frames(answers.assign(y=[0.0, 2.0, 3.0, 4.0]), answers, RMSE).score) is float


def test_row_order_does_not_matter(answers):
    submission = answers.assign(y=[1.0, 2.0, 3.0, 6.0]).iloc[::-1]
    assert grade_frames(submission, answers, RMSE).score == 1.0


def test_extra_columns_are_ignored(answers):
    assert grade_frames(answers.assign(note="x"), answers, RMSE).score == 0.0


def test_an_integer_id_written_as_a_float_matches_the_integer(answers):
    assert grade_frames(answers.assign(id=["1.0", "2.0", "3.", "4"]), answers, RMSE).valid


def test_it_compares_text_labels(penguins):
    submission = penguins.assign(species=["Adelie", "Gentoo", "Adelie", "Adelie"])
    assert grade_frames(submission, penguins, ACCURACY).score == 0.75


def test_numeric_labels_match_whatever_way_they_are_written():
    answers = pd.DataFrame({"id": [1, 2], "label": [0, 1]})
    submission = pd.DataFrame({"id": [1, 2], "label": ["0.0", "1.0"]})
    assert grade_frames(submission, answers, GradingSpec("accuracy", "id", ("label",))).score == 1.0


def test_surrounding_whitespace_in_cells_is_ignored(tmp_path, answers_csv):
    submission = write(tmp_path, "id,y\n 1 , 1.0\n2,2.0 \n3,3\n4,4\n")
    assert grade_submission(submission, answers_csv, RMSE).score == 0.0


def test_target_columns_are_matched_by_name_not_position():
    answers = pd.DataFrame({"id": [1, 2, 3], "a": [1, 0, 0], "b": [0, 1, 0], "c": [0, 0, 1]})
    submission = pd.DataFrame(
        {"c": [0.1, 0.1, 0.8], "id": [1, 2, 3], "b": [0.1, 0.8, 0.1], "a": [0.8, 0.1, 0.1]}
    )
    grade = grade_frames(submission, answers, GradingSpec("log_loss", "id", ("a", "b", "c")))
    assert grade.score == pytest.approx(-np.log(0.8))


def test_it_grades_a_file_as_it_grades_the_same_table(tmp_path, answers, answers_csv):
    submission = answers.assign(y=[1.5, 2.0, 2.5, 4.0])
    submission.to_csv(tmp_path / "submission.csv", index=False)
    from_file = grade_submission(tmp_path / "submission.csv", answers_csv, RMSE)
    assert from_file == grade_frames(submission, answers, RMSE)


# -- invalid files -------------------------------------------------------------------------------------------


def test_a_missing_submission_file_is_invalid(tmp_path, answers_csv):
    assert "no submission file" in grade_submission(tmp_path / "nope.csv", answers_csv, RMSE).error


def test_a_directory_is_not_a_submission(tmp_path, answers_csv):
    (tmp_path / "submission.csv").mkdir()
    assert "not a file" in grade_submission(tmp_path / "submission.csv", answers_csv, RMSE).error


@pytest.mark.parametrize("content", ["", "\n", "  \n\n"])
def test_an_empty_submission_file_is_invalid(tmp_path, answers_csv, content):
    assert "is empty" in grade_submission(write(tmp_path, content), answers_csv, RMSE).error


def test_binary_garbage_is_invalid(tmp_path, answers_csv):
    garbage = write(tmp_path, bytes(range(256)) * 4)
    assert "not a readable CSV file" in grade_submission(garbage, answers_csv, RMSE).error


@pytest.mark.parametrize("seed", range(8))
def test_random_bytes_never_make_the_grader_raise(tmp_path, answers_csv, seed):
    noise = np.random.default_rng(seed).bytes(200)
    content = b"id,y\n" + noise if seed % 2 else noise
    assert not grade_submission(write(tmp_path, content), answers_csv, RMSE).valid


def test_a_row_longer_than_the_header_is_invalid(tmp_path, answers_csv):
    submission = write(tmp_path, "id,y\n1,1,9\n2,2\n3,3\n4,4\n")
    assert "not a readable CSV file" in grade_submission(submission, answers_csv, RMSE).error


def test_a_header_without_rows_is_invalid(tmp_path, answers_csv):
    error = grade_submission(write(tmp_path, "id,y\n"), answers_csv, RMSE).error
    assert error == "The submission has 0 rows where the answers have 4, and lacks ids '1', '2', '3', '4'."


# -- columns and ids -----------------------------------------------------------------------------------------


def test_a_missing_id_column_is_named(answers):
    assert error_of(answers.rename(columns={"id": "Id"}), answers).startswith(
        "The submission has no column 'id'"
    )


def test_a_missing_target_column_is_named_with_the_columns_found(answers):
    error = error_of(answers.rename(columns={"y": "target"}), answers)
    assert error == "The submission has no column 'y' (its columns: 'id', 'target')."


def test_a_column_given_twice_is_invalid(answers):
    submission = pd.concat([answers, answers[["y"]]], axis=1)
    assert error_of(submission, answers) == "The submission has more than one column named 'y'."


def test_missing_rows_are_named(answers):
    assert (
        error_of(answers.iloc[:3], answers)
        == "The submission has 3 rows where the answers have 4, and lacks ids '4'."
    )


def test_repeated_ids_are_named(answers):
    submission = answers.assign(id=[1, 2, 2, 4])
    assert error_of(submission, answers) == "The submission repeats ids '2'."


def test_an_id_and_the_same_id_written_as_a_float_are_a_repeat(answers):
    assert error_of(answers.assign(id=["1", "2", "3", "3.0"]), answers) == "The submission repeats ids '3'."


def test_unexpected_ids_are_named_next_to_the_missing_ones(answers):
    error = error_of(answers.assign(id=[1, 2, 3, 5]), answers)
    assert error == "The submission lacks ids '4', and has unexpected ids '5'."


def test_leading_zeros_make_a_different_id():
    answers = pd.DataFrame({"id": ["001", "002"], "y": [1.0, 2.0]})
    error = error_of(pd.DataFrame({"id": [1, 2], "y": [1.0, 2.0]}), answers)
    assert error == "The submission lacks ids '001', '002', and has unexpected ids '1', '2'."


def test_long_id_lists_are_shortened():
    answers = pd.DataFrame({"id": range(20), "y": 1.0})
    error = error_of(answers.iloc[:2], answers)
    assert error.endswith("lacks ids '2', '3', '4', '5', '6' and 13 more.")


def test_an_empty_id_is_invalid(answers):
    assert (
        error_of(answers.assign(id=[1, 2, None, 4]), answers)
        == "The submission has 1 row(s) with an empty 'id'."
    )


# -- cells ---------------------------------------------------------------------------------------------------


def test_an_empty_target_cell_is_named(answers):
    error = error_of(answers.assign(y=[1.0, np.nan, 3.0, 4.0]), answers)
    assert error == "Column 'y' of the submission is empty for ids '2'."


def test_a_blank_cell_in_a_file_is_empty(tmp_path, answers_csv):
    error = grade_submission(write(tmp_path, "id,y\n1,1\n2,\n3,3\n4,4\n"), answers_csv, RMSE).error
    assert error == "Column 'y' of the submission is empty for ids '2'."


def test_an_empty_text_label_is_invalid(penguins):
    submission = penguins.assign(species=["Adelie", "", "Gentoo", "Adelie"])
    assert (
        error_of(submission, penguins, ACCURACY) == "Column 'species' of the submission is empty for ids 'b'."
    )


def test_text_where_numbers_are_needed_is_named_with_its_value(answers):
    error = error_of(answers.assign(y=["1", "two", "3", "4"]), answers)
    assert error == "Column 'y' of the submission must hold numbers, which ids '2' ('two') do not."


def test_infinite_values_are_invalid(answers):
    assert "ids '3' ('inf')" in error_of(answers.assign(y=[1.0, 2.0, np.inf, 4.0]), answers)


def test_probabilities_outside_zero_to_one_are_invalid():
    answers = pd.DataFrame({"id": [1, 2], "p": [0, 1]})
    error = error_of(pd.DataFrame({"id": [1, 2], "p": [0.2, 1.5]}), answers, AUC)
    assert (
        error
        == "Column 'p' of the submission must hold probabilities in [0, 1], which ids '2' ('1.5') do not."
    )


def test_negative_values_are_invalid_for_rmsle(answers):
    error = error_of(answers.assign(y=[1.0, -0.5, 3.0, 4.0]), answers, GradingSpec("rmsle", "id", ("y",)))
    assert (
        error == "Column 'y' of the submission must hold values of at least 0, which ids '2' ('-0.5') do not."
    )


def test_text_labels_are_invalid_where_the_answers_labels_are_numbers():
    answers = pd.DataFrame({"id": [1, 2], "label": [0, 1]})
    error = error_of(
        pd.DataFrame({"id": [1, 2], "label": ["no", "yes"]}), answers, GradingSpec("f1", "id", ("label",))
    )
    assert error.startswith("Column 'label' of the submission must hold numeric labels like the answers")


def test_an_undefined_score_makes_the_submission_invalid():
    answers = pd.DataFrame({"id": [1, 2], "grade": [3, 3]})
    spec = GradingSpec("quadratic_weighted_kappa", "id", ("grade",))
    assert "undefined for this submission" in error_of(answers, answers, spec)


def test_a_constant_prediction_under_pearson_is_invalid_and_marked_undefined(answers):
    grade = grade_frames(answers.assign(y=2.0), answers, GradingSpec("pearson", "id", ("y",)))
    assert (grade.valid, grade.undefined) == (False, True)
    assert grade.error == "The metric 'pearson' is undefined for this submission (it scored nan)."


def test_a_submission_that_fails_a_check_is_not_marked_undefined(answers):
    assert not grade_frames(answers.iloc[1:], answers, RMSE).undefined


# -- the checks of MLE-bench's graders -----------------------------------------------------------------------

AUTHORS = pd.DataFrame({"id": ["id1", "id2"], "EAP": [1, 0], "HPL": [0, 1], "MWS": [0, 0]})
LOG_LOSS = GradingSpec("log_loss", "id", ("EAP", "HPL", "MWS"))


def test_extra_columns_are_invalid_where_the_grader_refuses_them():
    submission = AUTHORS.assign(EAP=0.5, HPL=0.25, MWS=0.25, text="x")
    assert error_of(submission, AUTHORS, LOG_LOSS) == (
        "The submission must have exactly the columns 'id', 'EAP', 'HPL', 'MWS', not also 'text'."
    )


def test_extra_columns_are_ignored_where_the_grader_ignores_them():
    submission = AUTHORS.assign(EAP=0.5, HPL=0.25, MWS=0.25, text="x")
    assert grade_frames(submission, AUTHORS, GradingSpec("log_loss_6dp", "id", ("EAP", "HPL", "MWS"))).valid


def test_probability_rows_must_sum_to_one_within_the_graders_tolerance():
    submission = AUTHORS.assign(EAP=[0.5, 0.2], HPL=[0.25, 0.5], MWS=[0.25, 0.31])
    assert error_of(submission, AUTHORS, LOG_LOSS) == (
        "Each row of probabilities must sum to 1 within 1e-6 (numpy.isclose, atol=1e-6), which the rows of "
        "ids 'id2' (1.01) do not."
    )
    within = AUTHORS.assign(EAP=[0.5, 0.2], HPL=[0.25, 0.5], MWS=[0.25, 0.300001])
    assert grade_frames(within, AUTHORS, LOG_LOSS).score == pytest.approx(-(np.log(0.5) + np.log(0.5)) / 2)


def test_rows_are_not_renormalised_before_scoring():
    answers = pd.DataFrame({"id": [1], "a": [1], "b": [0]})
    spec = GradingSpec("log_loss_6dp", "id", ("a", "b"))
    assert not grade_frames(pd.DataFrame({"id": [1], "a": [0.5], "b": [0.4]}), answers, spec).valid


@pytest.mark.parametrize("metric", ["quadratic_weighted_kappa", "accuracy"])
def test_fractional_labels_are_invalid_where_the_answers_are_whole_numbers(metric):
    answers = pd.DataFrame({"id": [1, 2, 3], "score": [1, 2, 3]})
    error = error_of(answers.assign(score=[1.0, 2.5, 3.0]), answers, GradingSpec(metric, "id", ("score",)))
    assert error.startswith("Column 'score' of the submission must hold whole-number labels like the answers")
    assert "'2' ('2.5')" in error


def test_whole_labels_written_as_floats_are_accepted():
    answers = pd.DataFrame({"id": [1, 2, 3], "score": [1, 2, 3]})
    spec = GradingSpec("quadratic_weighted_kappa", "id", ("score",))
    assert grade_frames(answers.assign(score=["1.0", "2", "3.0"]), answers, spec).score == pytest.approx(1.0)


TWEETS = pd.DataFrame({"textID": ["a1", "b2"], "selected_text": ["so sad", "Good Day"]})
JACCARD = GradingSpec("jaccard", "textID", ("selected_text",))


def test_a_text_metric_grades_text_and_takes_an_empty_cell_as_empty_text():
    submission = pd.DataFrame({"textID": ["b2", "a1"], "selected_text": ["good day today", ""]})
    assert grade_frames(submission, TWEETS, JACCARD).score == pytest.approx((0.0 + 2 / 3) / 2)


def test_a_text_metric_still_needs_every_id(tmp_path):
    path = write(tmp_path, "textID,selected_text\na1,\n")
    answers = write(tmp_path, "textID,selected_text\na1,so sad\nb2,good\n", "answers.csv")
    assert "lacks ids 'b2'" in grade_submission(path, answers, JACCARD).error


# -- our own mistakes raise ----------------------------------------------------------------------------------


def test_answers_without_the_target_column_raise(answers):
    with pytest.raises(ValueError, match="The answers file has no column 'y'"):
        grade_frames(answers, answers.drop(columns="y"), RMSE)


def test_answers_with_repeated_ids_raise(answers):
    with pytest.raises(ValueError, match="The answers file repeats ids '1'"):
        grade_frames(answers, answers.assign(id=[1, 1, 2, 3]), RMSE)


def test_answers_with_empty_cells_raise(answers):
    with pytest.raises(ValueError, match="Column 'y' of the answers file is empty"):
        grade_frames(answers, answers.assign(y=[1.0, None, 3.0, 4.0]), RMSE)


def test_answers_that_the_metric_cannot_score_raise():
    answers = pd.DataFrame({"id": [1, 2], "p": [1, 1]})
    with pytest.raises(ValueError, match="cannot score these answers"):
        grade_frames(answers.assign(p=0.5), answers, AUC)


def test_a_missing_answers_file_raises(tmp_path):
    with pytest.raises(ValueError, match="no answers file"):
        grade_submission(write(tmp_path, "id,y\n1,1\n"), tmp_path / "answers.csv", RMSE)


def test_answers_are_checked_before_the_submission(answers):
    with pytest.raises(ValueError):
        grade_frames(pd.DataFrame(), answers.drop(columns="y"), RMSE)


def test_a_spec_with_an_unknown_metric_raises():
    with pytest.raises(UnknownMetricError):
        GradingSpec("auc", "id", ("y",))


def test_a_spec_with_a_column_count_the_metric_cannot_take_raises():
    with pytest.raises(ValueError, match="cannot grade 1 target column"):
        GradingSpec("roc_auc_ovr", "id", ("p",))


def test_a_spec_whose_targets_include_the_id_raises():
    with pytest.raises(ValueError, match="not the id column"):
        GradingSpec("rmse", "id", ("id", "y"))


def test_a_spec_turns_a_list_of_targets_into_a_tuple():
    assert GradingSpec("rmse", "id", ["y"]).target_columns == ("y",)  # type: ignore[arg-type]
