"""The registry of competition metrics: what each one computes, its direction and its best value.

Every metric is a plain function `fn(y_true, y_pred) -> float` (in `rl_core.metric_functions`) over two
arrays of the same shape (N, C): N rows (one per test id, already aligned) and C = len(target_columns).
The convention follows Kaggle's and MLE-bench's: `answers.csv` and a submission have the same columns
(the id column plus the target columns), so a submission's target columns hold, according to the
metric's `prediction` kind:

- ``"label"``: predicted labels, compared with the answers' labels (ints, floats or strings);
- ``"probability"``: probabilities in [0, 1] (binary: P(label == 1); multiclass: one column per class,
  named like the answers' one-hot columns);
- ``"value"``: real numbers (regression);
- ``"text"``: free text, compared word by word with the answers' text (an empty prediction is allowed).

Label and text metrics take exactly one target column. A metric also carries the checks its MLE-bench
grader makes on a submission beyond the metric itself (whole-number labels, no extra columns, rows of
probabilities summing to 1 within the grader's tolerance); `rl_core.grading` applies them. Aliases
(Kaggle or MLE-bench grader names) are deliberately not resolved here: importers map them.

>>> get_metric("rmse").fn(np.array([[1.0], [3.0]]), np.array([[1.0], [1.0]]))
1.4142135623730951
>>> get_metric("accuracy").higher_is_better, get_metric("log_loss").perfect
(True, 0.0)
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from rl_core import metric_functions as fns
from rl_core.metric_functions import LOG_LOSS_EPS, MetricFn

__all__ = [
    "LOG_LOSS_EPS",
    "METRICS",
    "Metric",
    "RowSums",
    "UnknownMetricError",
    "format_score",
    "get_metric",
    "is_better",
]

PredictionKind = Literal["label", "probability", "value", "text"]


@dataclass(frozen=True)
class RowSums:
    """How close to 1 each row of class probabilities must sum, as one MLE-bench grader checks it.

    Attributes:
        rule: the words an error message uses, e.g. "to 1 within 1e-6".
        check: (N,) row sums -> (N,) bools, True where the row passes.
    """

    rule: str
    check: Callable[[np.ndarray], np.ndarray]


ROWS_WITHIN_1E6 = RowSums(
    "to 1 within 1e-6 (numpy.isclose, atol=1e-6)", lambda sums: np.isclose(sums, 1.0, atol=1e-6)
)
"""spooky-author-identification's and leaf-classification's check (numpy's default rtol=1e-5 applies too)."""

ROWS_ROUND_TO_1 = RowSums("to 1 when rounded to 6 decimals", lambda sums: np.round(sums, 6) == 1.0)
"""lmsys-chatbot-arena's check: ``submission[classes].sum(axis=1).round(6).eq(1)``."""


@dataclass(frozen=True)
class Metric:
    """One metric and what a submission graded by it must look like.

    Attributes:
        name: registry key, e.g. ``"roc_auc"``.
        higher_is_better: True when larger scores are better (accuracy), False for losses (rmse).
        perfect: the best attainable score (1.0 for accuracy, 0.0 for rmse); a perfect prediction scores it.
        prediction: what a submission's target columns hold: ``"label"``, ``"probability"``, ``"value"``
            or ``"text"``.
        fn: ``fn(y_true, y_pred) -> float`` on two aligned (N, C) arrays, C = number of target columns.
        description: one line, shown on competition pages.
        min_columns: the fewest target columns the metric accepts.
        max_columns: the most target columns it accepts; None for no limit.
        min_value: the smallest value answers and predictions may hold (0.0 for RMSLE), None for no bound.
            Probability metrics are bounded to [0, 1] by their prediction kind.
        integer_labels: whether numeric labels must be whole numbers (scikit-learn refuses a mix of
            class labels and continuous values, so MLE-bench's graders do too).
        exact_columns: whether a submission may hold only the id and target columns (no other column).
        row_sums: for a probability metric over two or more columns, how close to 1 each row must sum;
            None when rows need not sum to 1.
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
    integer_labels: bool = False
    exact_columns: bool = False
    row_sums: RowSums | None = None

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

    @property
    def direction(self) -> str:
        """In words: "higher is better" or "lower is better"."""
        return "higher is better" if self.higher_is_better else "lower is better"


SCORE_DIGITS = 5
"""Significant digits a score is shown with (`format_score`)."""


def format_score(score: float, digits: int = SCORE_DIGITS) -> str:
    """`score` for people: `digits` significant digits, trailing zeros kept, never in exponent form.

    Significant digits rather than a number of decimals per metric, because losses are unbounded: an RMSE
    in dollars may be 25432.1 and a log loss 0.00123, so any fixed number of decimals prints one of them
    as 25432.12345 or 0.00. Five significant digits are Kaggle's five decimals for the scores between 0.1
    and 1 that most metrics give, and scale for the rest. Scores are never rounded where they are compared.

    >>> format_score(0.21940183), format_score(25432.123), format_score(1.0), format_score(0.000123456)
    ('0.21940', '25432', '1.0000', '0.00012346')
    >>> format_score(0.0), format_score(-0.5), format_score(float("nan"))
    ('0.0000', '-0.50000', 'nan')
    """
    if not math.isfinite(score):
        return str(score)
    magnitude = math.floor(math.log10(abs(score))) if score else 0
    decimals = min(max(digits - 1 - magnitude, 0), 15)  # 15: a double's precision, for tiny scores
    return f"{score:.{decimals}f}"


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


_LOG_LOSS = Metric(
    "log_loss",
    False,
    0.0,
    "probability",
    fns.log_loss,
    "Cross-entropy of the predicted probabilities (each row summing to 1; clipped at machine epsilon).",
    max_columns=None,
    exact_columns=True,
    row_sums=ROWS_WITHIN_1E6,
)
_COLUMNWISE_AUC = _score(
    "mean_columnwise_roc_auc",
    "probability",
    fns.mean_columnwise_roc_auc,
    "ROC AUC of each binary target column, averaged over columns.",
    max_columns=None,
)

_METRICS = (
    dataclasses.replace(
        _score("accuracy", "label", fns.accuracy, "Fraction of rows labelled correctly."), integer_labels=True
    ),
    _score("balanced_accuracy", "label", fns.balanced_accuracy, "Mean per-class recall."),
    _score("f1", "label", fns.f1, "Binary F1 score of the positive label 1."),
    _score("f1_macro", "label", fns.f1_macro, "Unweighted mean of per-class F1 scores."),
    dataclasses.replace(
        _score(
            "quadratic_weighted_kappa",
            "label",
            fns.quadratic_weighted_kappa,
            "Agreement between ordinal labels, penalising distant mistakes quadratically.",
        ),
        integer_labels=True,
    ),
    _score("roc_auc", "probability", fns.roc_auc, "Area under the ROC curve of P(label = 1)."),
    _score(
        "roc_auc_ovr",
        "probability",
        fns.roc_auc_ovr,
        "Multiclass ROC AUC, each class against the rest, averaged over classes.",
        min_columns=2,
        max_columns=None,
    ),
    _COLUMNWISE_AUC,
    # plant-pathology-2020-fgvc7's grader refuses any column besides the id and the four classes.
    dataclasses.replace(_COLUMNWISE_AUC, name="mean_columnwise_roc_auc_exact", exact_columns=True),
    _LOG_LOSS,
    # lmsys-chatbot-arena's grader ignores other columns and rounds each row's sum to 6 decimals.
    dataclasses.replace(_LOG_LOSS, name="log_loss_6dp", exact_columns=False, row_sums=ROWS_ROUND_TO_1),
    _loss("rmse", fns.rmse, "Root mean squared error."),
    _loss("rmsle", fns.rmsle, "Root mean squared logarithmic error.", min_value=0.0),
    _loss(
        "mean_columnwise_rmsle",
        fns.mean_columnwise_rmsle,
        "Root mean squared logarithmic error of each target column, averaged over columns.",
        min_value=0.0,
    ),
    _loss("mae", fns.mae, "Mean absolute error."),
    _score("r2", "value", fns.r2, "Coefficient of determination (R²).", max_columns=None),
    _score("pearson", "value", fns.pearson, "Pearson correlation between predictions and answers."),
    _score("spearman", "value", fns.spearman, "Spearman rank correlation between predictions and answers."),
    _score("jaccard", "text", fns.jaccard, "Mean word-level Jaccard similarity of predicted and true text."),
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


def positive_label(labels: Sequence[Any]) -> Any:
    """The label whose probability a one-column probability metric wants: 1 (or "1"), else the last one.

    >>> positive_label([0, 1]), positive_label(["no", "yes"])
    (1, 'yes')
    """
    ones = [label for label in labels if str(label) in ("1", "1.0", "True")]
    return ones[0] if ones else (labels[-1] if labels else None)
