"""A competition from one labelled table: read it, propose how to grade it, and check the user's choices.

A user with one table of labelled rows (CSV, a JSON list of records, or JSON lines) and no hidden answers
gets a competition the way MLE-bench's `prepare.py` files make one from Kaggle data: part of the rows
become the hidden test set. `tables.files` reads the table; this module proposes, all editable:

- the id column: the first column named like an id (``id``, ``row_id``, ``PassengerId``, ``ID``) whose
  values are present and unique, else none (then `tables.bundle` writes a generated ``id``);
- the targets: the column named ``target``, ``label``, ``class`` or ``y`` (any case), else the last one;
- the metric (`propose_metric`): roc_auc for two classes, log_loss for up to ten classes (accuracy for
  more), rmse for numbers, mean_columnwise_roc_auc for several 0/1 columns;
- the test fraction: 0.2.

`check_choices` turns (possibly edited) choices into a `Plan` or raises `TableError`, one sentence naming
the uploaded file and what is wrong. `tables.bundle` splits the rows and writes the bundle; the import
service stores it. Plain pandas: no Django, no database, nothing written.
Not done: tables that do not fit in memory; targets that are free text (a text-span metric).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from rl_core.grading import MISSING_SPELLINGS
from rl_core.metrics import get_metric, metric_names
from webapp.competitions.tables.files import Table, TableError, read_table

__all__ = ["Choices", "Plan", "Table", "TableError", "check_choices", "propose", "read_table"]

Kind = Literal["binary", "multiclass", "regression", "multilabel"]

MIN_ROWS = 20
"""Fewest rows a table needs: enough for a training set and a test set with a few rows each."""
MIN_TEST_ROWS = 5
DEFAULT_TEST_FRACTION = 0.2
TEST_FRACTION_RANGE = (0.05, 0.5)
MAX_INTEGER_CLASSES = 20
"""A whole-number target with at most this many distinct values is a class label, not a quantity."""
MAX_LOG_LOSS_CLASSES = 10
"""Above this many classes, one probability column per class makes unwieldy files: accuracy is proposed."""
TARGET_NAMES = ("target", "label", "class", "y")
GENERATED_ID_NAMES = ("id", "row_id", "example_id")
PROPOSED_METRIC = {"binary": "roc_auc", "multiclass": "log_loss", "regression": "rmse"}


@dataclass(frozen=True)
class Choices:
    """What the user decides; `id_column` None means a generated id column."""

    id_column: str | None
    target_columns: tuple[str, ...]
    metric: str
    test_fraction: float = DEFAULT_TEST_FRACTION


@dataclass(frozen=True)
class Plan:
    """Checked choices and what follows from them.

    Attributes:
        choices: the checked choices.
        id_column: the id column of every written file (the chosen one, or the generated one's name).
        kind: binary or multiclass (one label column), regression, or multilabel (several 0/1 columns).
        classes: the class labels, sorted, for binary and multiclass; () otherwise.
        features: the columns besides the id and the targets, in table order.
    """

    choices: Choices
    id_column: str
    kind: Kind
    classes: tuple[str, ...]
    features: tuple[str, ...]

    @property
    def stratified(self) -> bool:
        return self.kind in ("binary", "multiclass")


# -- what the columns hold -------------------------------------------------------------------------------


def present(column: pd.Series) -> pd.Series:
    """The column's non-missing cells (missing as the grader reads it: blank, "nan", "NaN", "<NA>")."""
    return column[~column.str.strip().isin(MISSING_SPELLINGS)]


def numbers(column: pd.Series) -> pd.Series | None:
    """The non-missing cells as floats, or None when one of them is not a number."""
    values = pd.to_numeric(present(column), errors="coerce")
    return None if values.isna().any() else values.astype(float)


def column_type(column: pd.Series) -> str:
    """ "integer", "number" or "text"."""
    values = numbers(column)
    if values is None or values.empty:
        return "text"
    return "integer" if (values == values.round()).all() else "number"


def is_label(column: pd.Series) -> bool:
    """Whether a target column holds class labels (text, or few whole numbers) rather than quantities."""
    kind = column_type(column)
    return kind == "text" or (kind == "integer" and present(column).nunique() <= MAX_INTEGER_CLASSES)


def is_zero_one(column: pd.Series) -> bool:
    values = numbers(column)
    return values is not None and bool(values.isin([0.0, 1.0]).all())


def target_kind(frame: pd.DataFrame, targets: tuple[str, ...]) -> Kind | None:
    """What the targets are; None for several targets that are neither all 0/1 nor all numbers."""
    if len(targets) == 1:
        column = frame[targets[0]]
        if not is_label(column):
            return "regression"
        return "binary" if present(column).nunique() == 2 else "multiclass"
    if all(is_zero_one(frame[t]) for t in targets):
        return "multilabel"
    if all(numbers(frame[t]) is not None for t in targets):
        return "regression"
    return None


def class_labels(column: pd.Series) -> tuple[str, ...]:
    """The distinct labels, sorted as numbers when they all are, else as text."""
    labels = present(column).unique().tolist()
    if numbers(column) is not None:
        return tuple(sorted(labels, key=float))
    return tuple(sorted(labels))


# -- proposals -------------------------------------------------------------------------------------------


def propose(table: Table) -> Choices:
    """The proposed id column, target, metric and test fraction for `table`."""
    frame = table.frame
    named = [c for c in frame.columns if str(c).lower() in TARGET_NAMES]
    targets = (named[0] if named else frame.columns[-1],)
    id_column = propose_id_column(frame, exclude=targets)
    return Choices(
        id_column=id_column,
        target_columns=targets,
        metric=propose_metric(frame, targets),
        test_fraction=DEFAULT_TEST_FRACTION,
    )


def propose_id_column(frame: pd.DataFrame, exclude: tuple[str, ...] = ()) -> str | None:
    """The first column named like an id whose cells are all present and unique; None to generate one."""
    for column in frame.columns:
        if column in exclude or not is_id_name(str(column)):
            continue
        cells = frame[column]
        if len(present(cells)) == len(cells) and cells.is_unique:
            return str(column)
    return None


def is_id_name(name: str) -> bool:
    """Named like an id: "id" in any case, or ending in one after a separator or in camel case.

    >>> [is_id_name(n) for n in ("ID", "row_id", "PassengerId", "user ID", "paid", "valid")]
    [True, True, True, True, False, False]
    """
    return bool(re.fullmatch(r"id|.*[_\s.-]id", name, re.IGNORECASE) or re.fullmatch(r".*[a-z0-9]Id", name))


def propose_metric(frame: pd.DataFrame, targets: tuple[str, ...]) -> str:
    """The metric a Kaggle host would likely pick for these targets (rmse when unsure)."""
    kind = target_kind(frame, targets)
    if kind == "multilabel":
        return "mean_columnwise_roc_auc"
    if kind == "multiclass" and present(frame[targets[0]]).nunique() > MAX_LOG_LOSS_CLASSES:
        return "accuracy"
    return PROPOSED_METRIC.get(kind or "regression", "rmse")


def fitting_metrics(frame: pd.DataFrame, targets: tuple[str, ...]) -> list[str]:
    """Every metric that can grade these targets, in the registry's order."""
    return [name for name in metric_names() if metric_misfit(frame, targets, name) is None]


def metric_misfit(frame: pd.DataFrame, targets: tuple[str, ...], metric_name: str) -> str | None:
    """Why `metric_name` cannot grade these targets (the end of a sentence), or None when it can."""
    metric = get_metric(metric_name)
    kind = target_kind(frame, targets)
    columns = ", ".join(repr(t) for t in targets)
    if metric.prediction == "value":
        values = [numbers(frame[t]) for t in targets]
        if any(v is None for v in values):
            return f"needs numbers, and {columns} holds text"
        floor = metric.min_value
        if floor is not None and any(bool((v < floor).any()) for v in values if v is not None):
            return f"needs values of at least {floor:g}, and {columns} has smaller ones"
        if not metric.accepts_columns(len(targets)):
            return "takes exactly one target column"
        return None
    return label_misfit(frame, targets, metric_name, kind)


CLASS_METRICS: dict[str, tuple[Kind, ...]] = {
    "accuracy": ("binary", "multiclass"),
    "balanced_accuracy": ("binary", "multiclass"),
    "f1_macro": ("binary", "multiclass"),
    "f1": ("binary",),
    "quadratic_weighted_kappa": ("binary", "multiclass"),
    "roc_auc": ("binary",),
    "log_loss": ("binary", "multiclass"),
    "roc_auc_ovr": ("multiclass",),
    "mean_columnwise_roc_auc": ("binary", "multilabel"),
}
"""The label and probability metrics offered for a table, and the kinds of target each grades. Others
(text spans, MLE-bench's stricter variants) are for imported competitions."""


def label_misfit(frame: pd.DataFrame, targets: tuple[str, ...], name: str, kind: Kind | None) -> str | None:
    """Why a label or probability metric cannot grade these targets, or None (see `metric_misfit`)."""
    if name not in CLASS_METRICS:
        return "is not offered for a table"
    zero_one = len(targets) == 1 and is_zero_one(frame[targets[0]])
    if name in ("f1", "mean_columnwise_roc_auc") and kind == "binary" and not zero_one:
        return "needs the labels 0 and 1"
    if name == "quadratic_weighted_kappa" and column_type(frame[targets[0]]) != "integer":
        return "needs whole-number (ordinal) labels"
    if kind in CLASS_METRICS[name]:
        return None
    what = {
        "binary": "two classes",
        "multiclass": "more than two classes",
        "regression": "numbers (a regression target)",
        "multilabel": "several 0/1 columns",
        None: "columns of mixed kinds",
    }[kind]
    return f"does not fit a target of {what}"


# -- checking the choices --------------------------------------------------------------------------------


def check_choices(table: Table, choices: Choices) -> Plan:
    """The plan for `choices`, or TableError naming the first thing wrong with them."""
    frame, name = table.frame, table.name
    if len(frame) < MIN_ROWS:
        raise TableError(f"{name}: has {len(frame)} rows; a competition needs at least {MIN_ROWS}.")
    targets = check_targets(table, choices)
    id_column = check_id_column(table, choices) if choices.id_column else generated_id_name(frame)
    features = tuple(str(c) for c in frame.columns if c not in targets and c != choices.id_column)
    if not features:
        raise TableError(f"{name}: has no feature columns besides the id and the targets.")
    kind = target_kind(frame, targets)
    misfit = (
        metric_misfit(frame, targets, choices.metric) if choices.metric in metric_names() else "is unknown"
    )
    if kind is None or misfit:
        raise TableError(
            f"{name}: the metric {choices.metric!r} {misfit or 'does not fit'} ({', '.join(targets)})."
        )
    classes = class_labels(frame[targets[0]]) if kind in ("binary", "multiclass") else ()
    plan = Plan(choices=choices, id_column=id_column, kind=kind, classes=classes, features=features)
    check_sizes(table, plan)
    return plan


def check_targets(table: Table, choices: Choices) -> tuple[str, ...]:
    frame, name = table.frame, table.name
    targets = tuple(choices.target_columns)
    if not targets:
        raise TableError(f"{name}: choose at least one target column.")
    for target in targets:
        if target not in frame.columns:
            raise TableError(f"{name}: has no column {target!r} to predict.")
        if target == choices.id_column:
            raise TableError(f"{name}: the column {target!r} cannot be both the id and a target.")
        missing = frame.index[~frame.index.isin(present(frame[target]).index)]
        if len(missing):
            rows = ", ".join(str(i + 1) for i in missing[:3]) + (", ..." if len(missing) > 3 else "")
            raise TableError(
                f"{name}: the target column {target!r} has {len(missing)} missing values (rows {rows})."
            )
        if present(frame[target]).nunique() < 2:
            raise TableError(
                f"{name}: the target column {target!r} holds a single value; nothing to predict."
            )
    return targets


def check_id_column(table: Table, choices: Choices) -> str:
    frame, name, column = table.frame, table.name, str(choices.id_column)
    if column not in frame.columns:
        raise TableError(f"{name}: has no column {column!r} to use as the id.")
    cells = frame[column]
    if len(present(cells)) < len(cells):
        raise TableError(f"{name}: the id column {column!r} has empty values.")
    repeated = cells[cells.duplicated()].unique().tolist()
    if repeated:
        shown = ", ".join(repr(v) for v in repeated[:3]) + (", ..." if len(repeated) > 3 else "")
        raise TableError(f"{name}: the id column {column!r} has duplicates ({shown} appear more than once).")
    return column


def generated_id_name(frame: pd.DataFrame) -> str:
    """The name of the generated id column: the first of `GENERATED_ID_NAMES` the table does not use."""
    free = [n for n in GENERATED_ID_NAMES if n not in frame.columns]
    if not free:
        raise TableError("The table already has columns id, row_id and example_id; choose one as the id.")
    return free[0]


def held_out_rows(n_rows: int, test_fraction: float) -> int:
    """How many rows the test set gets (as scikit-learn's train_test_split rounds: up).

    >>> held_out_rows(100, 0.2), held_out_rows(21, 0.2)
    (20, 5)
    """
    return -int(-n_rows * test_fraction // 1)


def check_sizes(table: Table, plan: Plan) -> None:
    """The test fraction is in range and leaves enough rows (and every class) on both sides."""
    fraction, name, n_rows = plan.choices.test_fraction, table.name, len(table.frame)
    low, high = TEST_FRACTION_RANGE
    if not low <= fraction <= high:
        raise TableError(f"{name}: the test fraction must be between {low} and {high}, not {fraction}.")
    n_test = held_out_rows(n_rows, fraction)
    if n_test < MIN_TEST_ROWS:
        raise TableError(
            f"{name}: a test fraction of {fraction} leaves {n_test} test rows; "
            f"at least {MIN_TEST_ROWS} are needed."
        )
    if not plan.stratified:
        return
    counts = present(table.frame[plan.choices.target_columns[0]]).value_counts()
    rare = counts[counts < 2]
    if len(rare):
        raise TableError(
            f"{name}: the class {rare.index[0]!r} of {plan.choices.target_columns[0]!r} has a single row; "
            "each class needs two, one for train and one for test."
        )
    if n_test < len(counts) or n_rows - n_test < len(counts):
        raise TableError(
            f"{name}: {len(counts)} classes do not fit in {n_test} test rows; raise the test fraction."
        )
