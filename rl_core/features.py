"""Competition features: what a policy may know about a task from its public files, never the answers.

`task_features` reads the head of ``train.csv`` and ``test.csv`` (at most `MAX_ROWS` rows each), or the
flattened ``train.json``/``test.json`` records, and says what kind of data (`rl_core.data_kinds`) and task
it is and what the columns hold; `feature_values` encodes that as a fixed-length vector to condition a
policy on, so one policy can train across competitions; `data_preview` describes every public file as text,
for prompts (`rl_core.public_files.describe_public_files`).

Task types (from the metric's prediction kind and the targets):

- ``"regression"`` / ``"multi_target_regression"``: a ``"value"`` metric with one / several targets;
- ``"binary"`` / ``"multiclass"``: one label (a ``"label"`` metric, or a ``"probability"`` metric with one
  target column, which holds P(label == 1)), or one-hot class-probability columns (several
  ``"probability"`` targets whose training rows are one-hot, or that are absent from ``train.csv``, where
  one label column holds the class instead);
- ``"multilabel"``: several ``"probability"`` targets, each its own 0/1 column, not one-hot;
- ``"text_span"``: the data kind of that name; each prediction is a span of the text column.

Image competitions have no feature columns: their programs read the images named by ``image_column``.

Column kinds: the feature columns are the columns of both files except the id. Numeric columns have a
numeric dtype; an object column is *text* when its values are long (on average at least
`TEXT_MIN_TOKENS` words or `TEXT_MIN_CHARS` characters) and mostly distinct, otherwise *categorical*.
Not done: dates are not recognised (they count as categorical), nor are numeric codes that are really
categories.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from rl_core.data_kinds import data_kind, image_features, read_table, span_features, table_names
from rl_core.metrics import get_metric, positive_label
from rl_core.public_files import describe_public_files

MAX_ROWS = 100_000
"""Rows read from each CSV; larger files are counted, not read."""

TEXT_MIN_TOKENS = 4.0
TEXT_MIN_CHARS = 30.0
TEXT_MIN_UNIQUE = 0.3
"""An object column is text when its mean word count or length passes the first two bounds and at least
this fraction of its non-missing values are distinct."""

TASK_TYPES = ("binary", "multiclass", "regression", "multi_target_regression", "multilabel")
PREDICTION_KINDS = ("label", "probability", "value")

FEATURE_NAMES = (
    *(f"task_type={t}" for t in TASK_TYPES),
    *(f"prediction={p}" for p in PREDICTION_KINDS),
    "log_rows",
    "log_features",
    "numeric_share",
    "categorical_share",
    "text_share",
    "has_categorical",
    "has_text",
    "missing_fraction",
    "has_missing",
    "log_classes",
    "log_targets",
    "bias",
)
"""The meaning of each entry of `feature_values`, in order."""


def _read_head(path: Path) -> pd.DataFrame:
    return read_table(path, MAX_ROWS)


def _count_rows(path: Path, head: pd.DataFrame) -> int:
    """Rows in the CSV at `path`, whose first `MAX_ROWS` rows are `head` (all rows of a JSON file)."""
    if len(head) < MAX_ROWS or path.suffix.lower() != ".csv":
        return len(head)
    first = head.columns[0]
    return sum(len(chunk) for chunk in pd.read_csv(path, usecols=[first], chunksize=MAX_ROWS))


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python scalar JSON can hold (1 for np.int64(1))."""
    return value.item() if hasattr(value, "item") else value


def is_text(column: pd.Series) -> bool:
    """Whether an object column holds free text rather than categories.

    >>> is_text(pd.Series(["a long sentence with many words", "another one with a few more words"]))
    True
    >>> is_text(pd.Series(["red", "blue", "red"]))
    False
    """
    values = column.dropna().astype(str)
    if values.empty or values.nunique() < TEXT_MIN_UNIQUE * len(values):
        return False
    long_words = values.str.split().str.len().mean() >= TEXT_MIN_TOKENS
    return bool(long_words or values.str.len().mean() >= TEXT_MIN_CHARS)


def _column_kinds(frame: pd.DataFrame) -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {"numeric": [], "categorical": [], "text": []}
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            kinds["numeric"].append(name)
        else:
            kinds["text" if is_text(column) else "categorical"].append(name)
    return kinds


def _label_column(train: pd.DataFrame, test: pd.DataFrame, id_column: str, targets: list[str]) -> str:
    """The one training column absent from test.csv, which holds the class of one-hot targets."""
    extra = [c for c in train.columns if c not in test.columns and c != id_column and c not in targets]
    if len(extra) != 1:
        raise ValueError(
            f"train.csv lacks the target columns {targets} and should then hold exactly one label column "
            f"absent from test.csv; found {extra or 'none'}."
        )
    return str(extra[0])


def _match_classes(targets: list[str], labels: list[Any]) -> list[list[Any]]:
    """[[target column, class label], ...]: a column matches the label it names, alone or as a suffix."""
    pairs = []
    for column in targets:
        named = [lab for lab in labels if column == str(lab) or column.endswith(f"_{lab}")]
        pairs.append([column, named[0] if named else None])
    if any(label is None for _, label in pairs) and len(labels) == len(targets):
        pairs = [[column, label] for column, label in zip(targets, sorted(labels, key=str), strict=True)]
    return pairs


def _is_one_hot(values: pd.DataFrame) -> bool:
    binary = values.isin([0, 1]).all().all()
    return bool(binary and (values.sum(axis=1) == 1).all())


def _labels(column: pd.Series) -> list[Any]:
    return sorted((_plain(v) for v in column.dropna().unique()), key=str)


Targets = tuple[str, str | None, list[Any], list[list[Any]]]


def _targets(
    train: pd.DataFrame, test: pd.DataFrame, id_column: str, targets: list[str], prediction: str
) -> Targets:
    """(task type, label column or None, class labels, [[column, class], ...]) of the targets."""
    result: Targets
    if prediction == "value":
        result = ("regression" if len(targets) == 1 else "multi_target_regression"), None, [], []
    elif all(t in train.columns for t in targets) and len(targets) > 1:
        if _is_one_hot(train[targets].dropna()):
            result = "multiclass", None, list(targets), [[t, t] for t in targets]
        else:
            result = "multilabel", None, [], []
    else:
        direct = len(targets) == 1 and targets[0] in train.columns
        label = targets[0] if direct else _label_column(train, test, id_column, targets)
        labels = _labels(train[label])
        if len(targets) == 1:
            result = ("binary" if len(labels) <= 2 else "multiclass"), label, labels, []
        else:
            result = "multiclass", label, labels, _match_classes(targets, labels)
    return result


def task_features(
    public_dir: Path, *, id_column: str, target_columns: tuple[str, ...] | list[str], metric: str
) -> dict[str, Any]:
    """Describe a competition from its public training and test tables (and images, for an image task).

    Args:
        public_dir: the folder holding ``train.csv`` and ``test.csv`` (or ``train.json`` and ``test.json``).
        id_column, target_columns, metric: as in ``competition.yaml``.
    Returns:
        A JSON-serialisable dict: ``data_kind`` (one of `rl_core.data_kinds.DATA_KINDS`), ``train_file``
        and ``test_file`` (names under the public folder), ``task_type`` (one of `TASK_TYPES`, or
        ``"text_span"``), ``prediction`` (the metric's kind; ``"text"`` for spans), ``metric``,
        ``id_column``, ``target_columns``, ``label_column`` (the training column holding the label of a
        classification task, None when the targets themselves are the training columns), ``class_labels``
        (sorted by text), ``n_classes``, ``class_columns`` ([[submission column, class label], ...] for
        one-hot probability submissions, else []), ``positive_label`` (for binary tasks), ``n_rows``,
        ``n_test_rows``, ``n_features``, ``feature_columns``, ``numeric_columns``, ``categorical_columns``,
        ``text_columns``, ``missing_fraction`` (of feature cells, train and test heads together),
        ``min_value`` (the metric's lower bound on predictions, or None); for images also
        `rl_core.data_kinds.image_features`.
    Raises:
        ValueError: a target that cannot be found in the training table.
    """
    public_dir = Path(public_dir)
    kind = data_kind(public_dir, metric=metric, id_column=id_column)
    train_name, test_name = table_names(public_dir)
    train, test = _read_head(public_dir / train_name), _read_head(public_dir / test_name)
    targets = list(target_columns)
    common = {
        "data_kind": kind,
        "train_file": train_name,
        "test_file": test_name,
        "metric": metric,
        "id_column": id_column,
        "target_columns": targets,
        "n_rows": _count_rows(public_dir / train_name, train),
        "n_test_rows": _count_rows(public_dir / test_name, test),
    }
    if kind == "text_span":
        return common | _span_task(train, test, id_column, targets)
    info = get_metric(metric)
    task_type, label, labels, class_columns = _targets(train, test, id_column, targets, info.prediction)
    features = [c for c in test.columns if c in train.columns and c != id_column and c not in targets]
    if kind == "images":
        features = []  # an image program reads pixels, not the table's other columns
    both = pd.concat([train[features], test[features]], ignore_index=True)
    kinds = _column_kinds(both)
    extra = image_features(public_dir, train, id_column) if kind == "images" else {}
    return (
        common
        | extra
        | {
            "task_type": task_type,
            "prediction": info.prediction,
            "label_column": label,
            "class_labels": labels,
            "n_classes": len(labels),
            "class_columns": class_columns,
            "positive_label": positive_label(labels) if task_type == "binary" else None,
            "n_features": len(features),
            "feature_columns": features,
            "numeric_columns": kinds["numeric"],
            "categorical_columns": kinds["categorical"],
            "text_columns": kinds["text"],
            "missing_fraction": float(both.isna().to_numpy().mean()) if features else 0.0,
            "min_value": info.min_value,
        }
    )


def _span_task(train: pd.DataFrame, test: pd.DataFrame, id_column: str, targets: list[str]) -> dict[str, Any]:
    """The task facts of a text-span competition: one target, the span; no classes."""
    if len(targets) != 1 or targets[0] not in train.columns:
        raise ValueError(
            f"A text-span task needs one target column held by the training table, not {targets}."
        )
    return span_features(train, test, id_column, targets[0]) | {
        "task_type": "text_span",
        "prediction": "text",
        "label_column": None,
        "class_labels": [],
        "n_classes": 0,
        "class_columns": [],
        "positive_label": None,
        "min_value": None,
    }


def _log_scaled(value: float, top: float) -> float:
    """log1p(value) / log1p(top), clipped to [0, 1]: 1.0 at `top` and beyond."""
    return min(1.0, math.log1p(max(0.0, value)) / math.log1p(top))


def feature_values(features: Mapping[str, Any]) -> list[float]:
    """A fixed-length encoding of `task_features(...)` output in [0, 1], laid out as `FEATURE_NAMES` (a
    policy makes it a tensor; this module stays torch-free, so the web process may read features).

    >>> v = feature_values({"task_type": "binary", "prediction": "label", "n_rows": 1000, "n_features": 4})
    >>> len(v), v[0], v[-1]
    (20, 1.0, 1.0)
    """
    n_features = max(1, int(features.get("n_features", 0)))
    shares = [
        len(features.get(f"{kind}_columns", [])) / n_features for kind in ("numeric", "categorical", "text")
    ]
    missing = float(features.get("missing_fraction", 0.0))
    values = [
        *(float(features.get("task_type") == t) for t in TASK_TYPES),
        *(float(features.get("prediction") == p) for p in PREDICTION_KINDS),
        _log_scaled(features.get("n_rows", 0), 1e6),
        _log_scaled(features.get("n_features", 0), 1e3),
        *shares,
        float(shares[1] > 0),
        float(shares[2] > 0),
        missing,
        float(missing > 0),
        _log_scaled(features.get("n_classes", 0), 1e3),
        _log_scaled(len(features.get("target_columns", [])), 1e2),
        1.0,
    ]
    return values


def table_preview(public_dir: Path, n_rows: int = 5) -> str:
    """The first `n_rows` rows of ``train.csv`` and ``test.csv`` (those that exist) as text, long cells cut
    at 40 characters; text columns whose cells are longer are named below each table.

    Returns:
        Titled tables, e.g. ``"train.csv (first 5 rows, 3 columns):\\n id  age ..."``.
    """
    parts = []
    for name in ("train.csv", "test.csv"):
        path = Path(public_dir) / name
        if not path.is_file():
            continue
        head = pd.read_csv(path, nrows=n_rows, low_memory=False)
        table = head.to_string(index=False, max_colwidth=40, max_cols=30)
        long = [c for c in head.columns if head[c].astype(str).str.len().max() > 40]
        note = f"\nText columns (cells cut above at 40 characters): {', '.join(long)}" if long else ""
        parts.append(f"{name} (first {len(head)} rows, {head.shape[1]} columns):\n{table}{note}")
    return "\n\n".join(parts)


def data_preview(public_dir: Path, n_rows: int = 5, budget_chars: int = 2500) -> str:
    """Every public file for a prompt, within `budget_chars`: the listing with sizes, the head of the CSV
    tables (`table_preview`), the first JSON records and the images per folder
    (`rl_core.public_files.describe_public_files`)."""
    return describe_public_files(public_dir, table_preview(public_dir, n_rows), budget_chars)
