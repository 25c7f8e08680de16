"""Grade a submission CSV against the hidden answers: check it thoroughly, then score it with its metric.

A submission is valid when it is a readable CSV file with the id column and every target column (other
columns are ignored, unless the metric's grader refuses them: `Metric.exact_columns`), exactly the
answers' ids, each once, a value in every target cell (a text metric takes an empty cell as empty text),
and values of the kind the metric needs: numbers for probability and value metrics (finite;
probabilities in [0, 1], RMSLE values >= 0), labels for label metrics (numbers when the answers' labels
are numbers, whole numbers when they are and the metric needs it: `Metric.integer_labels`), text for
text metrics. Rows of class probabilities must sum to 1 as the metric's grader requires
(`Metric.row_sums`), and a score the metric leaves undefined (NaN) makes the submission invalid. These are
the checks of MLE-bench's graders. Row order never matters: rows are aligned on the id.

How cells are read. Every cell is read as text and stripped of surrounding whitespace. A cell is empty
when it is blank or spells a missing value the way Python and pandas print one (``nan``, ``NaN``,
``<NA>``). Ids are compared as text, so ``"001"`` and ``"1"`` are different ids, except that an integer
written with a zero fraction (``"3.0"``, ``"3."``) is the same id as the integer (``"3"``): that is how
pandas writes integer ids that went through a float column. Labels are compared as numbers when every
answer label is a number (so ``"1.0"`` matches ``1``), otherwise as case-sensitive text.

Errors. A bad submission never raises: `grade_frames` and `grade_submission` return
``Grade(valid=False, score=None, error=...)`` with one sentence naming the column, the ids or the
problem. A bad spec or answers file is Practicum's bug, not the agent's, and raises ValueError.
Not done: size limits on the submission file (the sandbox's file-size rlimit bounds it).

>>> answers = pd.DataFrame({"id": [1, 2, 3], "y": ["a", "b", "b"]})
>>> spec = GradingSpec("accuracy", "id", ("y",))
>>> grade_frames(pd.DataFrame({"id": ["3", "2.0", "1"], "y": ["b", "a", "a"]}), answers, spec)
Grade(valid=True, score=0.6666666666666666, error=None)
>>> grade_frames(pd.DataFrame({"id": [1, 2], "y": ["a", "b"]}), answers, spec).error
"The submission has 2 rows where the answers have 3, and lacks ids '3'."
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rl_core.metrics import Metric, get_metric

MISSING_SPELLINGS = frozenset({"", "nan", "NaN", "<NA>"})
"""Cell texts (after stripping) that count as empty."""

SHOWN_IDS = 5
"""How many offending ids an error message names before summarising the rest as "and N more"."""


@dataclass(frozen=True)
class GradingSpec:
    """How a competition is graded. Validated on construction (ValueError: it is our configuration).

    Attributes:
        metric: a name from `rl_core.metrics.METRICS`.
        id_column: the column that identifies a row in answers and submissions.
        target_columns: the columns the metric compares, in order (a list is converted to a tuple).
    """

    metric: str
    id_column: str
    target_columns: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "target_columns", tuple(self.target_columns))
        metric = get_metric(self.metric)
        targets = self.target_columns
        if not self.id_column:
            raise ValueError("The grading spec needs an id column.")
        if not targets or len(set(targets)) != len(targets) or self.id_column in targets:
            raise ValueError(
                f"The grading spec's target columns {list(targets)} must be distinct, non-empty "
                f"and not the id column {self.id_column!r}."
            )
        if not metric.accepts_columns(len(targets)):
            raise ValueError(f"The metric {metric.name!r} cannot grade {len(targets)} target column(s).")


@dataclass(frozen=True)
class Grade:
    """The outcome of grading one submission.

    Attributes:
        valid: whether the submission passed every check and was scored.
        score: the metric's value as a plain float when valid, else None.
        error: one sentence saying what is wrong when invalid, else None.
        undefined: True when the submission passed every check but the metric left its score undefined
            (NaN: the correlation of a constant prediction); such a grade is invalid, as in MLE-bench.
    """

    valid: bool
    score: float | None
    error: str | None
    undefined: bool = field(default=False, repr=False, compare=False)

    @classmethod
    def scored(cls, score: float) -> Grade:
        return cls(valid=True, score=float(score), error=None)

    @classmethod
    def invalid(cls, error: str, *, undefined: bool = False) -> Grade:
        return cls(valid=False, score=None, error=error, undefined=undefined)


class _Invalid(Exception):
    """A check failed; the message is the sentence a Grade (or, for answers, a ValueError) carries."""


class _Undefined(_Invalid):
    """Every check passed but the metric's score is not a finite number."""


# -- reading -----------------------------------------------------------------------------------------------


def _read_csv(path: Path, who: str) -> pd.DataFrame:
    """Every cell of a CSV file as text; _Invalid with one sentence when the file cannot be read as CSV."""
    if not path.exists():
        raise _Invalid(f"There is no {who} file at {path}.")
    if not path.is_file():
        raise _Invalid(f"The {who} path {path} is not a file.")
    try:
        with warnings.catch_warnings():
            # A first data row longer than the header would silently become the index, or lose cells.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(path, dtype=str, keep_default_na=False, index_col=False, encoding="utf-8-sig")
    except pd.errors.EmptyDataError:
        raise _Invalid(f"The {who} file {path.name} is empty.") from None
    except (pd.errors.ParserError, pd.errors.ParserWarning, ValueError, OSError) as error:
        reason = " ".join(str(error).split())[:200]
        raise _Invalid(f"The {who} file {path.name} is not a readable CSV file ({reason}).") from None


def _texts(column: pd.Series) -> pd.Series:
    """(N,) cell texts, stripped, with every spelling of a missing value turned into ""."""
    cells = column.tolist()  # Python's str() of a float is its shortest round-tripping repr
    texts = pd.Series(["" if cell is None else str(cell).strip() for cell in cells], index=column.index)
    return texts.where(~texts.isin(MISSING_SPELLINGS), "")


def _canonical_ids(ids: pd.Series) -> pd.Series:
    """(N,) id texts with an integer written as a float ("3.0", "3.") reduced to the integer ("3")."""
    dotted = ids.str.contains(".", regex=False)
    canonical = ids.copy()
    canonical[dotted] = ids[dotted].str.replace(r"^([+-]?\d+)\.0*$", r"\1", regex=True)
    return canonical


def _few(items: list[str]) -> str:
    """A short list for a message: "'3', '7' and 12 more"."""
    return _listed([repr(item) for item in items])


def _listed(parts: list[str]) -> str:
    """The first SHOWN_IDS parts joined by commas, then "and N more" for the rest."""
    shown = ", ".join(parts[:SHOWN_IDS])
    return shown if len(parts) <= SHOWN_IDS else f"{shown} and {len(parts) - SHOWN_IDS} more"


# -- checks shared by answers and submissions ----------------------------------------------------------------


def _targets(
    frame: pd.DataFrame, spec: GradingSpec, who: str, *, exact: bool = False, empty_ok: bool = False
) -> pd.DataFrame:
    """The target cells as text, indexed by canonical id, after checking columns, ids and empty cells.

    Args:
        exact: refuse columns besides the id and the targets.
        empty_ok: accept empty target cells (as "").
    Returns:
        (N, C) DataFrame of str, columns = spec.target_columns, index = canonical ids in file order.
    """
    _check_columns(frame, spec, who, exact=exact)
    ids = _canonical_ids(_texts(frame[spec.id_column]))
    if (ids == "").any():
        raise _Invalid(f"The {who} has {int((ids == '').sum())} row(s) with an empty {spec.id_column!r}.")
    repeated = ids[ids.duplicated()].unique().tolist()
    if repeated:
        raise _Invalid(f"The {who} repeats ids {_few(repeated)}.")
    targets = pd.DataFrame(
        {c: _texts(frame[c]).to_numpy() for c in spec.target_columns}, index=ids.to_numpy()
    )
    for column in spec.target_columns:
        empty = targets.index[targets[column] == ""].tolist()
        if empty and not empty_ok:
            raise _Invalid(f"Column {column!r} of the {who} is empty for ids {_few(empty)}.")
    return targets


def _check_columns(frame: pd.DataFrame, spec: GradingSpec, who: str, *, exact: bool) -> None:
    """_Invalid unless the id and target columns are each present exactly once (and, if exact, alone)."""
    found = [str(c) for c in frame.columns]
    expected = (spec.id_column, *spec.target_columns)
    for column in expected:
        if column not in frame.columns:
            raise _Invalid(f"The {who} has no column {column!r} (its columns: {_few(found)}).")
        if found.count(column) > 1:
            raise _Invalid(f"The {who} has more than one column named {column!r}.")
    extra = [c for c in found if c not in expected]
    if exact and extra:
        raise _Invalid(
            f"The {who} must have exactly the columns {_few(list(expected))}, not also {_few(extra)}."
        )


def _numbers(texts: pd.Series, metric: Metric, who: str, what: str) -> np.ndarray:
    """(N,) floats parsed from texts; _Invalid naming the ids that are not finite numbers or out of range."""
    values = pd.to_numeric(texts, errors="coerce").astype(float)
    column = f"Column {texts.name!r} of the {who}"
    _reject(texts, ~np.isfinite(values), f"{column} must hold {what}")
    if metric.prediction == "probability":
        _reject(texts, (values < 0) | (values > 1), f"{column} must hold probabilities in [0, 1]")
    if metric.min_value is not None:
        _reject(
            texts, values < metric.min_value, f"{column} must hold values of at least {metric.min_value:g}"
        )
    return np.asarray(values.to_numpy(), dtype=float)


def _reject(texts: pd.Series, bad: pd.Series, problem: str) -> None:
    """Raise _Invalid("<problem>, which ids 'a' ('x'), ... do not.") when any (N,) `bad` flag is set."""
    if bad.any():
        offenders = [f"{i!r} ({v!r})" for i, v in texts[bad].items()]
        raise _Invalid(f"{problem}, which ids {_listed(offenders)} do not.")


def _is_numeric(texts: pd.Series) -> bool:
    """Whether every text parses as a finite number."""
    return bool(np.isfinite(pd.to_numeric(texts, errors="coerce").astype(float)).all())


def _array(frame: pd.DataFrame, truth: pd.DataFrame, metric: Metric, who: str) -> np.ndarray:
    """(N, C) array of `frame`'s targets: floats, or str where the answers' labels are not numbers (or text).

    Args:
        frame: (N, C) target texts to convert (the answers themselves, or the aligned submission).
        truth: the answers' target texts, which decide whether labels are numbers or text.
    """
    if metric.prediction == "text" or (
        metric.prediction == "label" and not all(_is_numeric(truth[c]) for c in truth.columns)
    ):
        return np.asarray(frame.to_numpy(dtype=object))
    what = "numeric labels like the answers" if metric.prediction == "label" else "numbers"
    values = np.column_stack([_numbers(frame[c], metric, who, what) for c in frame.columns])
    if metric.integer_labels and _whole(truth):
        for c, column in enumerate(frame.columns):
            _reject(frame[column], values[:, c] != np.round(values[:, c]), _must_be_whole(column, who))
    return values


def _whole(truth: pd.DataFrame) -> bool:
    """Whether every answer label is a whole number (then scikit-learn refuses non-whole predictions)."""
    values = np.column_stack([pd.to_numeric(truth[c]).astype(float) for c in truth.columns])
    return bool((values == np.round(values)).all())


def _must_be_whole(column: str, who: str) -> str:
    return (
        f"Column {column!r} of the {who} must hold whole-number labels like the answers (scikit-learn "
        "refuses a mix of class labels and continuous values)"
    )


def _check_row_sums(y_pred: np.ndarray, ids: pd.Index, metric: Metric) -> None:
    """_Invalid unless each (N, C) row of class probabilities sums to 1 as the metric's grader requires."""
    if metric.row_sums is None or y_pred.shape[1] < 2:
        return
    sums = y_pred.sum(axis=1)
    bad = ~metric.row_sums.check(sums)
    if bad.any():
        offenders = [f"{i!r} ({s:.9g})" for i, s in zip(ids[bad], sums[bad], strict=True)]
        raise _Invalid(
            f"Each row of probabilities must sum {metric.row_sums.rule}, which the rows of ids "
            f"{_listed(offenders)} do not."
        )


# -- grading -----------------------------------------------------------------------------------------------


def _answers(answers: pd.DataFrame, spec: GradingSpec, metric: Metric) -> tuple[pd.DataFrame, np.ndarray]:
    """The answers' target texts and their (N, C) array for the metric; ValueError when they are unusable."""
    try:
        truth = _targets(answers, spec, "answers file")
        return truth, _array(truth, truth, metric, "answers file")
    except _Invalid as error:
        raise ValueError(str(error)) from None


def _check_ids(prediction: pd.DataFrame, truth: pd.DataFrame) -> None:
    """_Invalid unless the submission holds exactly the answers' ids (each once, checked before)."""
    missing = truth.index[~truth.index.isin(prediction.index)].tolist()
    unexpected = prediction.index[~prediction.index.isin(truth.index)].tolist()
    problems = []
    if len(prediction) != len(truth):
        problems.append(f"has {len(prediction)} rows where the answers have {len(truth)}")
    if missing:
        problems.append(f"lacks ids {_few(missing)}")
    if unexpected:
        problems.append(f"has unexpected ids {_few(unexpected)}")
    if problems:
        raise _Invalid("The submission " + ", and ".join(problems) + ".")


def _score(metric: Metric, y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """The metric's value; ValueError when the answers make it undefined, _Invalid when the score is."""
    try:
        score = float(metric.fn(y_true, y_pred))
    except ValueError as error:
        raise ValueError(f"The metric {metric.name!r} cannot score these answers: {error}") from error
    if not math.isfinite(score):
        raise _Undefined(f"The metric {metric.name!r} is undefined for this submission (it scored {score}).")
    return score


def grade_frames(submission: pd.DataFrame, answers: pd.DataFrame, spec: GradingSpec) -> Grade:
    """Check a submission against the answers and score it (see the module docstring for the rules).

    Args:
        submission: the agent's table: the id column, the target columns, anything else (ignored).
        answers: the hidden table with the same id and target columns.
        spec: the metric and the columns.
    Returns:
        Grade(valid=True, score=<float>, error=None), or Grade(valid=False, score=None, error=<sentence>).
    Raises:
        ValueError: the answers are unusable (missing columns, repeated ids, empty or wrong-kind cells,
            or values the metric cannot score, like a single class for ROC AUC).
    """
    metric = get_metric(spec.metric)
    truth, y_true = _answers(answers, spec, metric)
    try:
        prediction = _targets(
            submission,
            spec,
            "submission",
            exact=metric.exact_columns,
            empty_ok=metric.prediction == "text",
        )
        _check_ids(prediction, truth)
        y_pred = _array(prediction.loc[truth.index], truth, metric, "submission")
        _check_row_sums(y_pred, truth.index, metric)
        return Grade.scored(_score(metric, y_true, y_pred))
    except _Invalid as error:
        return Grade.invalid(str(error), undefined=isinstance(error, _Undefined))


def grade_submission(submission_path: Path, answers_path: Path, spec: GradingSpec) -> Grade:
    """Read both CSV files and grade them with `grade_frames`.

    Args:
        submission_path: the agent's ``submission.csv``; a missing, empty or unreadable file is invalid.
        answers_path: the hidden ``answers.csv``; a missing or unreadable one raises ValueError.
        spec: the metric and the columns.
    """
    try:
        answers = _read_csv(Path(answers_path), "answers")
    except _Invalid as error:
        raise ValueError(str(error)) from None
    try:
        submission = _read_csv(Path(submission_path), "submission")
    except _Invalid as error:
        return Grade.invalid(str(error))
    return grade_frames(submission, answers, spec)
