"""The registry of competition metrics: what each one computes, its direction and its best value.

Every metric is a plain function `fn(y_true, y_pred) -> float` over two arrays of the same shape (N, C):
N rows (one per test id, already aligned) and C = len(target_columns). The convention follows Kaggle's
and MLE-bench's: `answers.csv` and a submission have the same columns (the id column plus the target
columns), so a submission's target columns hold, according to the metric's `prediction` kind:

- ``"label"``: predicted labels, compared with the answers' labels (ints, floats or strings);
- ``"probability"``: probabilities in [0, 1] (binary: P(label == 1); multiclass: one column per class,
  named like the answers' one-hot columns);
- ``"value"``: real numbers (regression).

Label metrics take exactly one target column. Checking a submission's shape, types and ranges is
`rl_core.grading`'s job; the functions here assume clean, finite inputs and raise ValueError when a metric
is undefined for the answers (for example ROC AUC where the answers hold a single class).
Aliases (Kaggle or MLE-bench grader names) are deliberately not resolved here: importers map them.

>>> get_metric("rmse").fn(np.array([[1.0], [3.0]]), np.array([[1.0], [1.0]]))
1.4142135623730951
>>> get_metric("accuracy").higher_is_better, get_metric("log_loss").perfect
(True, 0.0)
"""

from __future__ import annotations

import functools
import types
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats
from sklearn import metrics as skm

PredictionKind = Literal["label", "probability", "value"]
MetricFn = Callable[[np.ndarray, np.ndarray], float]

LOG_LOSS_EPS = 1e-15
"""Log loss clips probabilities to [eps, 1 - eps] before renormalising each row, as Kaggle does."""


@dataclass(frozen=True)
class Metric:
    """One metric and what a submission graded by it must look like.

    Attributes:
        name: registry key, e.g. ``"roc_auc"``.
        higher_is_better: True when larger scores are better (accuracy), False for losses (rmse).
        perfect: the best attainable score (1.0 for accuracy, 0.0 for rmse); a perfect prediction scores it.
        prediction: what a submission's target columns hold: ``"label"``, ``"probability"`` or ``"value"``.
        fn: ``fn(y_true, y_pred) -> float`` on two aligned (N, C) arrays, C = number of target columns.
        description: one line, shown on competition pages.
        min_columns: the fewest target columns the metric accepts.
        max_columns: the most target columns it accepts; None for no limit.
        min_value: the smallest value answers and predictions may hold (0.0 for RMSLE), None for no bound.
            Probability metrics are bounded to [0, 1] by their prediction kind.
    """

    name: str
    higher_is_better: bool
    perfect: float
    prediction: PredictionKind
    fn: MetricFn
    description: str
    min_columns: int = 1
    max_columns: int | None = 1
    min_value: float | None = None

    def accepts_columns(self, n_columns: int) -> bool:
        """Whether this metric can grade `n_columns` target columns.

        >>> get_metric("roc_auc_ovr").accepts_columns(1), get_metric("log_loss").accepts_columns(3)
        (False, True)
        """
        return n_columns >= self.min_columns and (self.max_columns is None or n_columns <= self.max_columns)

    def better(self, score: float, than: float) -> bool:
        """Whether `score` strictly beats `than` in this metric's direction.

        >>> get_metric("rmse").better(0.2, 0.5), get_metric("accuracy").better(0.5, 0.5)
        (True, False)
        """
        return is_better(score, than, higher_is_better=self.higher_is_better)


def is_better(score: float, than: float, *, higher_is_better: bool) -> bool:
    """Whether `score` strictly beats `than` in a metric's direction.

    >>> is_better(0.2, 0.5, higher_is_better=False)
    True
    """
    return score > than if higher_is_better else score < than


class UnknownMetricError(ValueError):
    """A metric name that is not in `METRICS`; the message lists the known names."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Unknown metric {name!r}; known metrics are: {', '.join(metric_names())}.")
        self.name = name


def _quiet(fn: MetricFn) -> MetricFn:
    """Silence the library warnings (undefined precision, constant input ...) a grader should not print."""

    @functools.wraps(fn)
    def wrapper(y_true: np.ndarray, y_pred: np.ndarray) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(y_true, y_pred)

    return wrapper


def _only_column(a: np.ndarray) -> np.ndarray:
    """The single column of an (N, 1) array as an (N,) array; ValueError for any other shape."""
    if a.ndim != 2 or a.shape[1] != 1:
        raise ValueError(f"This metric takes exactly one target column, got an array of shape {a.shape}.")
    return a[:, 0]


def _is_positive(labels: np.ndarray) -> np.ndarray:
    """(N,) bools: which labels are the positive label 1 (numeric 1, or the string "1")."""
    if labels.dtype.kind in "biuf":
        return labels == 1
    return labels.astype(str) == "1"


# -- label metrics ---------------------------------------------------------------------------------------


def _encoded(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both single label columns as (N,) int codes into their joint, sorted label set.

    Numbers sort by value (so codes keep an ordinal order and 2.5 is just another label), anything else
    as text. Encoding spares scikit-learn from guessing whether float labels are "continuous".
    """
    true, pred = _only_column(y_true), _only_column(y_pred)
    if true.dtype.kind not in "biuf" or pred.dtype.kind not in "biuf":
        true, pred = true.astype(str), pred.astype(str)
    _, codes = np.unique(np.concatenate([true, pred]), return_inverse=True)
    return codes[: len(true)], codes[len(true) :]


@_quiet
def accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Fraction of rows whose predicted label equals the true label."""
    return float(skm.accuracy_score(*_encoded(y_true, y_pred)))


@_quiet
def balanced_accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean over the true classes of each class's recall."""
    return float(skm.balanced_accuracy_score(*_encoded(y_true, y_pred)))


def _binary_answers(labels: np.ndarray) -> np.ndarray:
    """(N,) bools of the positive answers; ValueError unless the labels are 0 and 1 with a 1 among them.

    Any other labels (``"yes"``/``"no"``, 1/2) would leave F1 scoring every submission 0.0.
    """
    numeric = labels.dtype.kind in "biuf"
    positive = _is_positive(labels)
    negative = labels == 0 if numeric else labels.astype(str) == "0"
    rest = labels[~(positive | negative)]
    others = np.unique(rest if numeric else rest.astype(str))
    if others.size:
        shown = ", ".join(f"{label:g}" if numeric else repr(str(label)) for label in others[:3])
        more = ", ..." if others.size > 3 else ""
        raise ValueError(f"F1 needs the labels 0 and 1 (1 is the positive label), not {shown}{more}.")
    if not positive.any():
        raise ValueError("F1 needs the positive label 1 among the answers, which hold only 0.")
    return positive


@_quiet
def f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Binary F1 of the positive label 1 against 0; ValueError for answers with other labels or no 1.

    >>> f1(np.array([["yes"], ["no"]]), np.array([["yes"], ["no"]]))
    Traceback (most recent call last):
    ValueError: F1 needs the labels 0 and 1 (1 is the positive label), not 'no', 'yes'.
    """
    positive_true = _binary_answers(_only_column(y_true))
    positive_pred = _is_positive(_only_column(y_pred))
    return float(skm.f1_score(positive_true, positive_pred, zero_division=0.0))


@_quiet
def f1_macro(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Unweighted mean of per-class F1 over every label seen in answers or predictions."""
    return float(skm.f1_score(*_encoded(y_true, y_pred), average="macro", zero_division=0.0))


@_quiet
def quadratic_weighted_kappa(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Cohen's kappa with quadratic weights over ordinal (numeric) labels; NaN when undefined.

    The weights use each label's rank among all labels seen, as scikit-learn does. Undefined means no
    expected disagreement: answers and predictions hold one and the same label.
    """
    if y_true.dtype.kind not in "biuf" or y_pred.dtype.kind not in "biuf":
        raise ValueError("Quadratic weighted kappa needs numeric (ordinal) labels like 0, 1, 2, not text.")
    return float(skm.cohen_kappa_score(*_encoded(y_true, y_pred), weights="quadratic"))


# -- probability metrics ---------------------------------------------------------------------------------


def _binary_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """ROC AUC of (N,) scores against (N,) 0/1 labels; ValueError when the labels hold one class only."""
    if np.unique(labels).size < 2:
        raise ValueError("ROC AUC needs answers with both labels 0 and 1, not a single class.")
    return float(skm.roc_auc_score(labels, scores))


@_quiet
def roc_auc(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Binary ROC AUC of P(1) against 0/1 labels (one column)."""
    return _binary_auc(_only_column(y_true), _only_column(y_pred))


@_quiet
def mean_columnwise_roc_auc(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean over the C columns of each column's binary ROC AUC (0/1 answers, probability predictions)."""
    return float(np.mean([_binary_auc(y_true[:, c], y_pred[:, c]) for c in range(y_true.shape[1])]))


def roc_auc_ovr(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Multiclass one-vs-rest macro ROC AUC: answers one-hot (N, C), predictions (N, C) class probabilities.

    One-vs-rest scores each class's column on its own, so this is the columnwise mean AUC; unlike
    scikit-learn's ``multi_class="ovr"`` it does not require rows to sum to one.
    """
    return mean_columnwise_roc_auc(y_true, y_pred)


def log_loss(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Kaggle's log loss: natural log, probabilities clipped to [1e-15, 1 - 1e-15], rows renormalised.

    One column: 0/1 labels against P(1). Several columns: one-hot answers against class probabilities.
    """
    if y_true.shape[1] == 1:
        y_true = np.hstack([1.0 - y_true, y_true])
        y_pred = np.hstack([1.0 - y_pred, y_pred])
    clipped = np.clip(y_pred.astype(float), LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS)
    probabilities = clipped / clipped.sum(axis=1, keepdims=True)
    return float(-np.mean(np.sum(y_true * np.log(probabilities), axis=1)))


# -- value metrics ---------------------------------------------------------------------------------------


def rmse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Root mean squared error over all N * C cells."""
    return float(np.sqrt(np.mean((y_true - y_pred) ** 2)))


def rmsle(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Root mean squared logarithmic error, sqrt(mean((log1p(pred) - log1p(true))^2)) over all cells."""
    return rmse(np.log1p(y_true), np.log1p(y_pred))


def mean_columnwise_rmsle(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean over the C columns of each column's RMSLE."""
    return float(np.mean([rmsle(y_true[:, [c]], y_pred[:, [c]]) for c in range(y_true.shape[1])]))


def mae(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean absolute error over all N * C cells."""
    return float(np.mean(np.abs(y_true - y_pred)))


@_quiet
def r2(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Coefficient of determination, averaged over columns (scikit-learn's r2_score, finite by convention)."""
    return float(skm.r2_score(y_true, y_pred))


def _correlation(statistic: Callable[..., object]) -> MetricFn:
    """A one-column correlation metric; a constant column carries no correlation and scores 0.0."""

    @_quiet
    def fn(y_true: np.ndarray, y_pred: np.ndarray) -> float:
        true, pred = _only_column(y_true).astype(float), _only_column(y_pred).astype(float)
        if np.ptp(true) == 0 or np.ptp(pred) == 0:
            return 0.0
        return float(statistic(true, pred).statistic)  # type: ignore[attr-defined]

    return fn


pearson = _correlation(stats.pearsonr)
spearman = _correlation(stats.spearmanr)


# -- the registry ----------------------------------------------------------------------------------------


def _score(
    name: str,
    prediction: PredictionKind,
    fn: MetricFn,
    description: str,
    *,
    min_columns: int = 1,
    max_columns: int | None = 1,
) -> Metric:
    """A higher-is-better metric whose best value is 1.0."""
    return Metric(name, True, 1.0, prediction, fn, description, min_columns, max_columns)


def _loss(name: str, fn: MetricFn, description: str, *, min_value: float | None = None) -> Metric:
    """A lower-is-better metric over any number of value columns, whose best value is 0.0."""
    return Metric(name, False, 0.0, "value", fn, description, max_columns=None, min_value=min_value)


_METRICS = (
    _score("accuracy", "label", accuracy, "Fraction of rows labelled correctly."),
    _score("balanced_accuracy", "label", balanced_accuracy, "Mean per-class recall."),
    _score("f1", "label", f1, "Binary F1 score of the positive label 1."),
    _score("f1_macro", "label", f1_macro, "Unweighted mean of per-class F1 scores."),
    _score(
        "quadratic_weighted_kappa",
        "label",
        quadratic_weighted_kappa,
        "Agreement between ordinal labels, penalising distant mistakes quadratically.",
    ),
    _score("roc_auc", "probability", roc_auc, "Area under the ROC curve of P(label = 1)."),
    _score(
        "roc_auc_ovr",
        "probability",
        roc_auc_ovr,
        "Multiclass ROC AUC, each class against the rest, averaged over classes.",
        min_columns=2,
        max_columns=None,
    ),
    _score(
        "mean_columnwise_roc_auc",
        "probability",
        mean_columnwise_roc_auc,
        "ROC AUC of each binary target column, averaged over columns.",
        max_columns=None,
    ),
    Metric(
        "log_loss",
        False,
        0.0,
        "probability",
        log_loss,
        "Cross-entropy of the predicted probabilities (clipped at 1e-15, rows renormalised).",
        max_columns=None,
    ),
    _loss("rmse", rmse, "Root mean squared error."),
    _loss("rmsle", rmsle, "Root mean squared logarithmic error.", min_value=0.0),
    _loss(
        "mean_columnwise_rmsle",
        mean_columnwise_rmsle,
        "Root mean squared logarithmic error of each target column, averaged over columns.",
        min_value=0.0,
    ),
    _loss("mae", mae, "Mean absolute error."),
    _score("r2", "value", r2, "Coefficient of determination (R²).", max_columns=None),
    _score("pearson", "value", pearson, "Pearson correlation between predictions and answers."),
    _score("spearman", "value", spearman, "Spearman rank correlation between predictions and answers."),
)

METRICS: Mapping[str, Metric] = types.MappingProxyType({metric.name: metric for metric in _METRICS})


def metric_names() -> list[str]:
    """The registered metric names, sorted.

    >>> metric_names()[:3]
    ['accuracy', 'balanced_accuracy', 'f1']
    """
    return sorted(METRICS)


def get_metric(name: str) -> Metric:
    """The metric registered under `name`; UnknownMetricError (a ValueError) naming the known ones otherwise.

    >>> get_metric("mae").prediction
    'value'
    """
    try:
        return METRICS[name]
    except KeyError:
        raise UnknownMetricError(name) from None
