"""rl_core.features: task inference from small in-code frames, the feature vector and the preview."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from rl_core import features
from rl_core.features import FEATURE_NAMES, data_preview, task_features
from rl_core.policies.grammar import feature_vector

WORDS = ["good", "bad", "great", "awful", "fine", "meh", "superb", "poor", "odd", "plain"]


def _inputs(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.normal(40, 10, size=n)
    age[::5] = np.nan
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "age": age,
            "colour": rng.choice(["red", "green", "blue"], size=n),
            "review": [" ".join(rng.choice(WORDS, size=7)) for _ in range(n)],
        }
    )


def _write(tmp_path, train: pd.DataFrame, test: pd.DataFrame):
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    return tmp_path


@pytest.fixture
def frames():
    train, test = _inputs(30), _inputs(10, seed=1)
    test["id"] += 100
    return train, test


def _features(tmp_path, train, test, targets, metric):
    public = _write(tmp_path, train, test)
    return task_features(public, id_column="id", target_columns=targets, metric=metric)


def test_it_infers_a_binary_label_task(tmp_path, frames):
    train, test = frames
    train["y"] = np.arange(30) % 2
    found = _features(tmp_path, train, test, ("y",), "accuracy")
    assert (found["task_type"], found["n_classes"], found["class_labels"]) == ("binary", 2, [0, 1])


def test_it_names_the_positive_label_of_a_binary_probability_task(tmp_path, frames):
    train, test = frames
    train["y"] = np.arange(30) % 2
    found = _features(tmp_path, train, test, ("y",), "roc_auc")
    assert (found["prediction"], found["positive_label"]) == ("probability", 1)


def test_it_infers_a_multiclass_label_task(tmp_path, frames):
    train, test = frames
    train["species"] = np.array(["a", "b", "c"])[np.arange(30) % 3]
    found = _features(tmp_path, train, test, ("species",), "accuracy")
    assert (found["task_type"], found["class_labels"]) == ("multiclass", ["a", "b", "c"])


def test_it_finds_the_label_column_of_one_hot_probability_targets(tmp_path, frames):
    train, test = frames
    train["species"] = np.array(["a", "b", "c"])[np.arange(30) % 3]
    found = _features(tmp_path, train, test, ("species_a", "species_b", "species_c"), "log_loss")
    assert found["task_type"] == "multiclass"
    assert found["label_column"] == "species"
    assert found["class_columns"] == [["species_a", "a"], ["species_b", "b"], ["species_c", "c"]]


def test_it_reads_one_hot_training_targets_as_multiclass(tmp_path, frames):
    train, test = frames
    for k, name in enumerate(["p", "q", "r"]):
        train[name] = (np.arange(30) % 3 == k).astype(int)
    found = _features(tmp_path, train, test, ("p", "q", "r"), "log_loss")
    assert (found["task_type"], found["label_column"], found["n_classes"]) == ("multiclass", None, 3)


def test_it_reads_independent_binary_targets_as_multilabel(tmp_path, frames):
    train, test = frames
    train["p"], train["q"] = np.arange(30) % 2, (np.arange(30) // 2) % 2
    found = _features(tmp_path, train, test, ("p", "q"), "mean_columnwise_roc_auc")
    assert found["task_type"] == "multilabel"


def test_it_infers_regression_and_multi_target_regression(tmp_path, frames):
    train, test = frames
    train["u"], train["v"] = np.linspace(0, 1, 30), np.linspace(1, 2, 30)
    single = _features(tmp_path, train, test, ("u",), "rmse")
    several = _features(tmp_path, train, test, ("u", "v"), "rmsle")
    assert (single["task_type"], several["task_type"]) == ("regression", "multi_target_regression")
    assert several["min_value"] == 0.0


def test_it_sorts_columns_into_numeric_categorical_and_text(tmp_path, frames):
    train, test = frames
    train["y"] = np.linspace(0, 1, 30)
    found = _features(tmp_path, train, test, ("y",), "rmse")
    kinds = found["numeric_columns"], found["categorical_columns"], found["text_columns"]
    assert kinds == (["age"], ["colour"], ["review"])
    assert found["feature_columns"] == ["age", "colour", "review"]


def test_it_measures_the_missing_fraction_of_feature_cells(tmp_path, frames):
    train, test = frames
    train["y"] = np.linspace(0, 1, 30)
    found = _features(tmp_path, train, test, ("y",), "rmse")
    assert found["missing_fraction"] == pytest.approx(8 / (40 * 3))  # every 5th age, train and test


def test_it_counts_rows_beyond_the_rows_it_reads(tmp_path, frames, monkeypatch):
    train, test = frames
    train["y"] = np.linspace(0, 1, 30)
    monkeypatch.setattr(features, "MAX_ROWS", 7)
    found = _features(tmp_path, train, test, ("y",), "rmse")
    assert (found["n_rows"], found["n_test_rows"]) == (30, 10)


def test_it_rejects_one_hot_targets_without_a_label_column(tmp_path, frames):
    train, test = frames
    with pytest.raises(ValueError, match="label column"):
        _features(tmp_path, train, test, ("species_a", "species_b"), "log_loss")


def test_feature_vector_has_a_fixed_length_in_the_unit_interval(tmp_path, frames):
    train, test = frames
    train["y"] = np.arange(30) % 2
    vector = feature_vector(_features(tmp_path, train, test, ("y",), "roc_auc"))
    assert vector.shape == (len(FEATURE_NAMES),)
    assert bool(((vector >= 0) & (vector <= 1)).all())


def test_feature_vector_tells_tasks_with_and_without_text_apart(tmp_path, frames):
    train, test = frames
    train["y"] = np.arange(30) % 2
    with_text = _features(tmp_path, train, test, ("y",), "roc_auc")
    without = _features(
        tmp_path, train.drop(columns="review"), test.drop(columns="review"), ("y",), "roc_auc"
    )
    assert not torch.equal(feature_vector(with_text), feature_vector(without))


def test_data_preview_shows_the_head_of_both_files(tmp_path, frames):
    train, test = frames
    train["y"] = np.arange(30) % 2
    preview = data_preview(_write(tmp_path, train, test), n_rows=3)
    assert "train.csv (first 3 rows, 5 columns)" in preview
    assert "test.csv (first 3 rows, 4 columns)" in preview
    assert "colour" in preview and "102" in preview
