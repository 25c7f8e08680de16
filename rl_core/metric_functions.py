"""The functions behind the metrics of `rl_core.metrics`: each ``fn(y_true, y_pred) -> float``.

Both arrays are (N, C): N aligned rows, C target columns (see `rl_core.metrics` for what each prediction
kind holds). The functions assume clean, finite inputs, already checked by `rl_core.grading`, and raise
ValueError where a metric is undefined for the answers (ROC AUC of a single class). A score that is
undefined for the predictions (the correlation of a constant column) is NaN, which the grader refuses.
Where a definition follows an MLE-bench grader (``mlebench/competitions/<id>/grade.py``), the docstring
says which.

>>> rmse(np.array([[1.0], [3.0]]), np.array([[1.0], [1.0]]))
1.4142135623730951
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable

import numpy as np
from scipy import stats
from sklearn import metrics as skm

MetricFn = Callable[[np.ndarray, np.ndarray], float]

LOG_LOSS_EPS = float(np.finfo(np.float64).eps)
"""Log loss clips probabilities to [eps, 1 - eps], eps = float64's machine epsilon (about 2.2e-16), as
scikit-learn >= 1.5 does for MLE-bench's graders; rows are not renormalised."""


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
        return np.asarray(labels == 1, dtype=bool)
    return np.asarray(labels.astype(str) == "1", dtype=bool)


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

    The weights use each label's rank among all labels seen, as scikit-learn's ``cohen_kappa_score``
    (MLE-bench's learning-agency-lab-automated-essay-scoring-2 grader) does. Undefined means no expected
    disagreement: answers and predictions hold one and the same label.
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
    """MLE-bench's log loss (scikit-learn >= 1.5): natural log, probabilities clipped to [eps, 1 - eps].

    One column: 0/1 labels against P(1). Several columns: one-hot answers against class probabilities,
    whose rows the grader has already checked to sum to 1 (`Metric.row_sums`); they are not renormalised.

    >>> round(log_loss(np.array([[1, 0], [0, 1]]), np.array([[0.8, 0.2], [0.5, 0.5]])), 6)
    0.458145
    """
    if y_true.shape[1] == 1:
        y_true = np.hstack([1.0 - y_true, y_true])
        y_pred = np.hstack([1.0 - y_pred, y_pred])
    clipped = np.clip(y_pred.astype(float), LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS)
    return float(-np.mean(np.sum(y_true * np.log(clipped), axis=1)))


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


def _correlation(statistic: Callable[..., object], *, constant: float) -> MetricFn:
    """A one-column correlation metric that scores `constant` when either column is constant."""

    @_quiet
    def fn(y_true: np.ndarray, y_pred: np.ndarray) -> float:
        true, pred = _only_column(y_true).astype(float), _only_column(y_pred).astype(float)
        if np.ptp(true) == 0 or np.ptp(pred) == 0:
            return constant
        return float(statistic(true, pred).statistic)  # type: ignore[attr-defined]

    return fn


pearson = _correlation(stats.pearsonr, constant=math.nan)
"""Pearson's r; NaN (undefined, so the submission is invalid) for a constant column, as SciPy gives it to
MLE-bench's us-patent-phrase-to-phrase-matching grader."""

spearman = _correlation(stats.spearmanr, constant=0.0)
"""Spearman's rho; 0.0 for a constant column (no rank correlation). No MLE-bench grader Practicum maps uses
it, and bundled competitions (doctor-visits) give a constant sample submission as their baseline."""


# -- text metrics ----------------------------------------------------------------------------------------


def word_jaccard(prediction: str, answer: str) -> float:
    """Jaccard similarity of the sets of lower-cased, whitespace-separated words; NaN when both are empty.

    tweet-sentiment-extraction's definition (MLE-bench's grader, from the competition page); the grader
    divides by zero where both texts are empty, which refuses the submission.

    >>> word_jaccard("Very GOOD day", "very good"), word_jaccard("", "sad")
    (0.6666666666666666, 0.0)
    """
    a, b = set(prediction.lower().split()), set(answer.lower().split())
    common = len(a & b)
    union = len(a) + len(b) - common
    return common / union if union else math.nan


def jaccard(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean word-level Jaccard similarity (`word_jaccard`) of each row's predicted text and answer text."""
    answers, predictions = _only_column(y_true), _only_column(y_pred)
    return float(np.mean([word_jaccard(str(p), str(t)) for p, t in zip(predictions, answers, strict=True)]))
