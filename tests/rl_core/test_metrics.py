"""rl_core.metrics: metrics against scikit-learn and SciPy, its direction and perfect value; the registry."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm

from rl_core.metrics import LOG_LOSS_EPS, METRICS, UnknownMetricError, get_metric, metric_names

SIZES = [(12, 0), (57, 1), (300, 2)]  # (rows N, seed)


def _binary(rng: np.random.Generator, n: int, columns: int = 1) -> np.ndarray:
    """(n, columns) 0/1 labels with both classes in every column."""
    labels = rng.integers(0, 2, size=(n, columns))
    labels[0], labels[1] = 0, 1
    return labels


def _classes(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """(n,) class indices 0..k-1, each class present."""
    labels = rng.integers(0, k, size=n)
    labels[:k] = np.arange(k)
    return labels


def _one_hot(labels: np.ndarray, k: int) -> np.ndarray:
    return np.eye(k)[labels]


def _positive_values(rng: np.random.Generator, n: int, columns: int) -> np.ndarray:
    return rng.exponential(3.0, size=(n, columns))


def example(name: str, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(y_true, y_pred): random answers and an imperfect prediction of the kind the metric grades."""
    if name in {"accuracy", "balanced_accuracy", "f1"}:
        return _binary(rng, n), _binary(rng, n)
    if name in {"f1_macro", "quadratic_weighted_kappa"}:
        return _classes(rng, n, 5)[:, None], _classes(rng, n, 5)[:, None]
    if name == "roc_auc":
        return _binary(rng, n), rng.random((n, 1))
    if name.startswith("mean_columnwise_roc_auc"):
        return _binary(rng, n, 3), rng.random((n, 3))
    if name == "jaccard":
        return _texts(rng, n), _texts(rng, n)
    if name in {"roc_auc_ovr", "log_loss", "log_loss_6dp"}:
        return _one_hot(_classes(rng, n, 4), 4), rng.dirichlet(np.ones(4), size=n)
    columns = 1 if name in {"pearson", "spearman"} else 2
    y_true = _positive_values(rng, n, columns)
    return y_true, np.abs(y_true + rng.normal(0.0, 1.0, size=y_true.shape))


def _labels(y: np.ndarray) -> np.ndarray:
    return y[:, 0]


WORDS = np.array(["good", "Bad", "day", "so", "sad", "", "happy"], dtype=object)


def _texts(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 1) object array of texts of 1 to 4 words, some repeated or capitalised."""
    return np.array(
        [[" ".join(rng.choice(WORDS[:5], size=rng.integers(1, 5)))] for _ in range(n)], dtype=object
    )


def _tweet_jaccard(t: np.ndarray, p: np.ndarray) -> float:
    """tweet-sentiment-extraction's grader: mean over rows of |A ∩ B| / (|A| + |B| - |A ∩ B|)."""
    scores = []
    for prediction, answer in zip(p[:, 0], t[:, 0], strict=True):
        a, b = set(prediction.lower().split()), set(answer.lower().split())
        scores.append(len(a & b) / (len(a) + len(b) - len(a & b)))
    return float(np.mean(scores))


def _mlebench_log_loss(t: np.ndarray, p: np.ndarray) -> float:
    """scikit-learn >= 1.5's log loss on one-hot answers, as MLE-bench's graders call it."""
    return skm.log_loss(t, p)


REFERENCES = {
    "accuracy": lambda t, p: skm.accuracy_score(_labels(t), _labels(p)),
    "balanced_accuracy": lambda t, p: skm.balanced_accuracy_score(_labels(t), _labels(p)),
    "f1": lambda t, p: skm.f1_score(_labels(t), _labels(p), pos_label=1),
    "f1_macro": lambda t, p: skm.f1_score(_labels(t), _labels(p), average="macro"),
    "quadratic_weighted_kappa": lambda t, p: skm.cohen_kappa_score(
        _labels(t), _labels(p), weights="quadratic"
    ),
    "roc_auc": lambda t, p: skm.roc_auc_score(_labels(t), _labels(p)),
    "roc_auc_ovr": lambda t, p: skm.roc_auc_score(t.argmax(1), p, multi_class="ovr", average="macro"),
    "mean_columnwise_roc_auc": lambda t, p: np.mean([skm.roc_auc_score(t[:, c], p[:, c]) for c in range(3)]),
    "mean_columnwise_roc_auc_exact": lambda t, p: np.mean(
        [skm.roc_auc_score(t[:, c], p[:, c]) for c in range(3)]
    ),
    "log_loss": _mlebench_log_loss,
    "log_loss_6dp": _mlebench_log_loss,
    "rmse": lambda t, p: math.sqrt(skm.mean_squared_error(t, p)),
    "rmsle": lambda t, p: math.sqrt(skm.mean_squared_log_error(t, p)),
    "mean_columnwise_rmsle": lambda t, p: skm.root_mean_squared_log_error(t, p),
    "mae": lambda t, p: skm.mean_absolute_error(t, p),
    "r2": lambda t, p: skm.r2_score(t, p),
    "pearson": lambda t, p: stats.pearsonr(_labels(t), _labels(p)).statistic,
    "spearman": lambda t, p: stats.spearmanr(_labels(t), _labels(p)).statistic,
    "jaccard": _tweet_jaccard,
}


PREDICTION_KINDS = {
    "label": ["accuracy", "balanced_accuracy", "f1", "f1_macro", "quadratic_weighted_kappa"],
    "probability": [
        "roc_auc",
        "roc_auc_ovr",
        "mean_columnwise_roc_auc",
        "mean_columnwise_roc_auc_exact",
        "log_loss",
        "log_loss_6dp",
    ],
    "value": ["rmse", "rmsle", "mean_columnwise_rmsle", "mae", "r2", "pearson", "spearman"],
    "text": ["jaccard"],
}


@pytest.mark.parametrize(
    "kind, name", [(kind, name) for kind, names in PREDICTION_KINDS.items() for name in names]
)
def test_it_declares_what_a_submission_holds_for_each_metric(kind, name):
    assert get_metric(name).prediction == kind


def test_it_registers_exactly_the_documented_metrics():
    assert metric_names() == sorted(REFERENCES)
    assert all(METRICS[name].name == name for name in METRICS)


@pytest.mark.parametrize("n, seed", SIZES)
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_it_agrees_with_the_reference_implementation(name, n, seed):
    y_true, y_pred = example(name, np.random.default_rng(seed), n)
    assert get_metric(name).fn(y_true, y_pred) == pytest.approx(REFERENCES[name](y_true, y_pred), abs=1e-9)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_a_perfect_prediction_scores_the_perfect_value(name):
    y_true, _ = example(name, np.random.default_rng(3), 40)
    metric = get_metric(name)
    assert metric.fn(y_true, y_true.copy()) == pytest.approx(metric.perfect, abs=1e-9)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_a_perfect_prediction_beats_an_imperfect_one_in_the_metrics_direction(name):
    y_true, y_pred = example(name, np.random.default_rng(4), 80)
    metric = get_metric(name)
    perfect, imperfect = metric.fn(y_true, y_true.copy()), metric.fn(y_true, y_pred)
    assert (perfect > imperfect) if metric.higher_is_better else (perfect < imperfect)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_it_returns_plain_python_floats(name):
    y_true, y_pred = example(name, np.random.default_rng(5), 30)
    assert type(get_metric(name).fn(y_true, y_pred)) is float


def test_it_compares_string_labels():
    y_true = np.array([["Adelie"], ["Gentoo"], ["Chinstrap"], ["Adelie"]], dtype=object)
    y_pred = np.array([["Adelie"], ["Gentoo"], ["Adelie"], ["Adelie"]], dtype=object)
    assert get_metric("accuracy").fn(y_true, y_pred) == 0.75


def test_f1_macro_of_string_labels_matches_scikit_learn():
    rng = np.random.default_rng(6)
    species = np.array(["Adelie", "Chinstrap", "Gentoo"], dtype=object)
    y_true, y_pred = species[_classes(rng, 50, 3)][:, None], species[_classes(rng, 50, 3)][:, None]
    expected = skm.f1_score(y_true[:, 0], y_pred[:, 0], average="macro")
    assert get_metric("f1_macro").fn(y_true, y_pred) == pytest.approx(expected)


def test_f1_treats_the_string_one_as_the_positive_label():
    y_true = np.array([["1"], ["0"], ["1"], ["0"]], dtype=object)
    y_pred = np.array([["1"], ["1"], ["0"], ["0"]], dtype=object)
    assert get_metric("f1").fn(y_true, y_pred) == pytest.approx(0.5)


def test_label_metrics_treat_a_fractional_prediction_as_just_another_label():
    y_true, y_pred = np.array([[1.0], [2.0], [3.0]]), np.array([[1.0], [2.5], [3.0]])
    assert get_metric("f1_macro").fn(y_true, y_pred) == pytest.approx(
        skm.f1_score(["1", "2", "3"], ["1", "x", "3"], average="macro")
    )


def test_quadratic_weighted_kappa_refuses_text_labels():
    labels = np.array([["low"], ["high"]], dtype=object)
    with pytest.raises(ValueError, match="numeric"):
        get_metric("quadratic_weighted_kappa").fn(labels, labels)


def test_binary_log_loss_takes_one_column_of_p1():
    rng = np.random.default_rng(7)
    y_true, y_pred = _binary(rng, 60), rng.random((60, 1))
    assert get_metric("log_loss").fn(y_true, y_pred) == pytest.approx(
        skm.log_loss(y_true[:, 0], y_pred[:, 0])
    )


def test_log_loss_clips_a_confidently_wrong_probability_at_machine_epsilon_as_scikit_learn_does():
    y_true, y_pred = np.array([[1.0], [0.0]]), np.array([[0.0], [0.0]])
    assert np.finfo(np.float64).eps == LOG_LOSS_EPS
    assert get_metric("log_loss").fn(y_true, y_pred) == pytest.approx(-math.log(LOG_LOSS_EPS) / 2)
    assert get_metric("log_loss").fn(y_true, y_pred) == pytest.approx(skm.log_loss([1, 0], [0.0, 0.0]))


def test_log_loss_does_not_renormalise_rows_the_grader_has_checked():
    y_true, y_pred = np.array([[1.0, 0.0]]), np.array([[0.5, 0.25]])
    assert get_metric("log_loss").fn(y_true, y_pred) == pytest.approx(math.log(2))


@pytest.mark.parametrize(
    "name, sums, passes",
    [
        ("log_loss", [1.0, 1.0 + 1e-5, 1.0 - 1.1e-5], [True, True, True]),  # numpy.isclose(atol=1e-6)
        ("log_loss", [1.0 + 1.2e-5, 0.99], [False, False]),
        ("log_loss_6dp", [1.0 + 4e-7, 1.0 - 4e-7], [True, True]),  # .round(6).eq(1)
        ("log_loss_6dp", [1.0 + 6e-7, 1.0 + 1e-5], [False, False]),
    ],
)
def test_probability_rows_must_sum_to_one_within_the_graders_tolerance(name, sums, passes):
    assert get_metric(name).row_sums.check(np.array(sums)).tolist() == passes


def test_the_log_loss_graders_differ_on_extra_columns():
    assert get_metric("log_loss").exact_columns and not get_metric("log_loss_6dp").exact_columns


def test_word_jaccard_lowercases_and_splits_on_whitespace():
    y_true = np.array([["Sooo SAD"], ["good day"], ["it is"]], dtype=object)
    y_pred = np.array([["sooo sad i"], [""], ["it  is"]], dtype=object)
    assert get_metric("jaccard").fn(y_true, y_pred) == pytest.approx((2 / 3 + 0.0 + 1.0) / 3)


def test_word_jaccard_is_undefined_where_both_texts_are_empty():
    assert math.isnan(
        get_metric("jaccard").fn(np.array([[""]], dtype=object), np.array([[" "]], dtype=object))
    )


def test_roc_auc_ovr_does_not_need_rows_to_sum_to_one():
    y_true, y_pred = example("roc_auc_ovr", np.random.default_rng(9), 30)
    metric = get_metric("roc_auc_ovr")
    assert metric.fn(y_true, y_pred * 3.0 / 4.0) == pytest.approx(metric.fn(y_true, y_pred))


@pytest.mark.parametrize("name", ["roc_auc", "mean_columnwise_roc_auc"])
def test_roc_auc_refuses_answers_with_a_single_class(name):
    with pytest.raises(ValueError, match="single class"):
        get_metric(name).fn(np.zeros((4, 1)), np.random.default_rng(0).random((4, 1)))


def test_pearson_of_a_constant_prediction_is_undefined_as_scipy_gives_it_to_mlebench():
    y_true = np.arange(10.0)[:, None]
    assert math.isnan(get_metric("pearson").fn(y_true, np.full((10, 1), 3.0)))


def test_spearman_of_a_constant_prediction_is_zero():
    y_true = np.arange(10.0)[:, None]
    assert get_metric("spearman").fn(y_true, np.full((10, 1), 3.0)) == 0.0


def test_a_single_column_metric_refuses_several_columns():
    with pytest.raises(ValueError, match="exactly one target column"):
        get_metric("accuracy").fn(np.zeros((3, 2)), np.zeros((3, 2)))


@pytest.mark.parametrize(
    "name, n_columns, accepted",
    [
        ("accuracy", 1, True),
        ("accuracy", 2, False),
        ("roc_auc_ovr", 1, False),
        ("roc_auc_ovr", 5, True),
        ("rmse", 3, True),
        ("log_loss", 1, True),
    ],
)
def test_it_says_which_numbers_of_target_columns_a_metric_accepts(name, n_columns, accepted):
    assert get_metric(name).accepts_columns(n_columns) is accepted


@pytest.mark.parametrize("name", ["rmsle", "mean_columnwise_rmsle"])
def test_log_error_metrics_declare_a_lower_bound_of_zero(name):
    assert get_metric(name).min_value == 0.0


def test_an_unknown_metric_name_raises_an_error_listing_the_known_ones():
    with pytest.raises(UnknownMetricError, match=r"'auc'.*roc_auc, roc_auc_ovr"):
        get_metric("auc")


def test_an_unknown_metric_error_is_a_value_error():
    assert issubclass(UnknownMetricError, ValueError)


def test_every_metric_has_a_one_line_description():
    assert all(m.description and "\n" not in m.description for m in METRICS.values())
