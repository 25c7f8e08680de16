"""The split itself and the validation competition written from it (the package docstring says how)."""

from __future__ import annotations

import dataclasses
import math
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupShuffleSplit, train_test_split

from rl_core.environment import TaskFiles
from rl_core.grading import GradingSpec, grade_frames
from rl_core.metrics import get_metric
from rl_core.validation.plan import (
    Plan,
    Refusal,
    RefusedSplit,
    ValidationSettings,
    read_public_csv,
    validation_plan,
)


def split_rows(
    train: pd.DataFrame, plan: Plan, grading: GradingSpec, settings: ValidationSettings
) -> tuple[np.ndarray, np.ndarray]:
    """(kept, held): ascending positions of the training table's rows that stay for training and that
    validate. Only labelled rows validate.

    Args:
        train: (N, ·) the training table as text, with a RangeIndex.
    Returns:
        two int arrays that together hold 0..N-1 once each, neither empty.
    """
    labelled = np.flatnonzero(_has_label(train, plan, grading))
    if len(labelled) < 2:
        raise ValueError(f"{plan.train_file} has {len(labelled)} labelled row(s); a split needs two.")
    rows = train.iloc[labelled].reset_index(drop=True)
    if settings.time_column:
        held = _latest(_times(rows[settings.time_column]), settings.fraction)
    elif settings.group_column:
        held = _grouped(rows[settings.group_column], settings)
    else:
        held = _shuffled(len(rows), _strata(rows, plan, grading), settings)
    held = np.sort(labelled[held])
    return np.setdiff1d(np.arange(len(train)), held), held


def _has_label(train: pd.DataFrame, plan: Plan, grading: GradingSpec) -> np.ndarray:
    columns = [plan.label_column] if plan.label_column else list(grading.target_columns)
    return np.asarray((train[columns].apply(lambda c: c.str.strip()) != "").all(axis=1))


def _latest(times: np.ndarray, fraction: float) -> np.ndarray:
    """Positions of the latest ceil(fraction * N) rows, at least 1 and at most N - 1; ties in file order.

    >>> _latest(np.array([5.0, 1.0, 3.0, 2.0, 4.0]), 0.4)
    array([4, 0])
    """
    n_held = min(max(math.ceil(fraction * len(times)), 1), len(times) - 1)
    return np.argsort(times, kind="stable")[len(times) - n_held :]


def _times(column: pd.Series) -> np.ndarray:
    """(N,) sortable times: the numbers, else the dates, of a column; ValueError naming a bad value."""
    numbers = pd.to_numeric(column, errors="coerce")
    if numbers.notna().all():
        return np.asarray(numbers, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "could not infer format": parsed one by one
        dates = pd.to_datetime(column, errors="coerce")
    if dates.isna().any():
        bad = column[dates.isna()].iloc[0]
        raise ValueError(f"The time column {column.name!r} holds {bad!r}, neither a number nor a date.")
    return np.asarray(dates.to_numpy())


def _grouped(groups: pd.Series, settings: ValidationSettings) -> np.ndarray:
    if groups.nunique() < 2:
        raise ValueError(f"The group column {groups.name!r} has one group; a group split needs two.")
    splitter = GroupShuffleSplit(n_splits=1, test_size=settings.fraction, random_state=settings.seed)
    _, held = next(splitter.split(np.zeros(len(groups)), groups=groups.to_numpy()))
    return np.asarray(held)


def _strata(rows: pd.DataFrame, plan: Plan, grading: GradingSpec) -> pd.Series | None:
    """(N,) the class of each row for a classification target, else None."""
    if plan.label_column:
        return rows[plan.label_column].str.strip()
    if get_metric(grading.metric).prediction not in ("label", "probability"):
        return None
    targets = rows[list(grading.target_columns)].apply(lambda c: c.str.strip())
    return pd.Series(["|".join(row) for row in targets.itertuples(index=False)])


def _shuffled(n: int, strata: pd.Series | None, settings: ValidationSettings) -> np.ndarray:
    """Positions of the validation rows of a seeded shuffle, stratified by `strata` when `stratifiable`."""
    if strata is not None and not stratifiable(strata.value_counts().tolist(), settings.fraction):
        strata = None  # a class too rare to sit on both sides
    _, held = train_test_split(
        np.arange(n), test_size=settings.fraction, random_state=settings.seed, stratify=strata
    )
    return np.asarray(held)


def stratifiable(counts: Sequence[int], fraction: float) -> bool:
    """Whether classes with these row counts can be split with every class on both sides.

    >>> stratifiable([10, 10], 0.2), stratifiable([10, 1], 0.2), stratifiable([2] * 5, 0.2)
    (True, False, False)
    """
    n = sum(counts)
    n_held = math.ceil(fraction * n)
    return min(counts) >= 2 and min(n_held, n - n_held) >= len(counts)


# -- the derived competition -------------------------------------------------------------------------------


def derive_validation(task: TaskFiles, dest: Path, settings: ValidationSettings) -> TaskFiles:
    """Split `task`'s labelled training table and write the validation competition under `dest`.

    Reads only `task.public_dir` (never `task.answers_path`). Checks everything first, then writes into a
    temporary sibling folder renamed to `dest`, so a failure leaves nothing behind.

    Args:
        task: the real competition.
        dest: the folder to create (it must not exist): public/ and answers.csv, as the module docstring says.
        settings: the seed, the validation fraction and the kind of split.
    Returns:
        the validation competition: `task` with public_dir ``dest/public``, answers_path
        ``dest/answers.csv`` and baseline_score the derived sample submission's score on the validation
        answers (None when the metric leaves a constant prediction's score undefined, as Spearman does).
    Raises:
        ValueError: no split can be made (`validation_plan`'s reason), or the metric cannot grade the
            validation answers (e.g. ROC AUC on validation rows of a single class).
        FileExistsError: `dest` exists.
    """
    plan = validation_plan(task.public_dir, task.grading, settings)
    if isinstance(plan, Refusal):
        raise ValueError(f"No validation split of {task.slug!r} can be made: {plan.reason}.")
    dest = Path(dest)
    if dest.exists():
        raise FileExistsError(f"The validation folder {dest} exists already.")
    frames, baseline = _derived_frames(task, plan, settings)
    _write_atomically(dest, frames)
    return dataclasses.replace(
        task, public_dir=dest / "public", answers_path=dest / "answers.csv", baseline_score=baseline
    )


def _derived_frames(
    task: TaskFiles, plan: Plan, settings: ValidationSettings
) -> tuple[dict[str, pd.DataFrame], float | None]:
    """({path under dest: frame}, the baseline score) of the validation competition."""
    train = _public(task.public_dir, plan.train_file)
    kept, held = split_rows(train, plan, task.grading, settings)
    validation = train.iloc[held].reset_index(drop=True)
    ids = _validation_ids(validation, plan)
    answers = _with_ids(ids, plan.id_column, _answers(validation, plan, task.grading))
    constant = _constant(_public(task.public_dir, plan.sample_file), task.grading)
    sample = _with_ids(ids, plan.id_column, pd.DataFrame({c: [v] * len(ids) for c, v in constant.items()}))
    test = pd.DataFrame({c: ids if c == plan.id_column else validation[c] for c in plan.test_columns})
    frames = {
        "public/train.csv": train.iloc[kept],
        "public/test.csv": test,
        "public/sample_submission.csv": sample,
        "answers.csv": answers,
    }
    return frames, _baseline(sample, answers, task)


def _public(public_dir: Path, name: str) -> pd.DataFrame:
    try:
        return read_public_csv(public_dir / name)
    except RefusedSplit as error:
        raise ValueError(f"{error}.") from None


def _validation_ids(validation: pd.DataFrame, plan: Plan) -> pd.Series:
    """(N,) the validation rows' ids: the training table's, or "1".."N" when it has none."""
    if plan.ids_generated:
        return pd.Series([str(i) for i in range(1, len(validation) + 1)])
    return validation[plan.id_column]


def _answers(validation: pd.DataFrame, plan: Plan, grading: GradingSpec) -> pd.DataFrame:
    """(N, C) the graded columns: as the training table holds them, or 0/1 per class from the label column."""
    if not plan.label_column:
        return validation[list(grading.target_columns)]
    labels = validation[plan.label_column].str.strip().to_numpy()
    return pd.DataFrame(
        {
            g: np.where(labels == c, "1", "0")
            for g, c in zip(grading.target_columns, plan.classes, strict=True)
        }
    )


def _with_ids(ids: pd.Series, id_column: str, values: pd.DataFrame) -> pd.DataFrame:
    frame = values.reset_index(drop=True)
    frame.insert(0, id_column, ids.to_numpy())
    return frame


def _constant(sample: pd.DataFrame, grading: GradingSpec) -> dict[str, str]:
    """The sample submission's prediction as text per graded column: its first row's values when every row
    agrees (or the metric wants labels or text), else the column means."""
    graded = sample[list(grading.target_columns)]
    if graded.empty:
        raise ValueError("The sample submission has no rows to take a constant prediction from.")
    first = {c: str(graded[c].iloc[0]) for c in graded.columns}
    numbers = graded.apply(pd.to_numeric, errors="coerce")
    if (graded.nunique() <= 1).all() or get_metric(grading.metric).prediction in ("label", "text"):
        return first
    if numbers.isna().any().any():
        return first
    return {c: repr(float(numbers[c].mean())) for c in graded.columns}


def _baseline(sample: pd.DataFrame, answers: pd.DataFrame, task: TaskFiles) -> float | None:
    try:
        return grade_frames(sample, answers, task.grading).score
    except ValueError as error:
        raise ValueError(
            f"The metric cannot grade the validation answers of {task.slug!r}: {error}"
        ) from None


def _write_atomically(dest: Path, frames: dict[str, pd.DataFrame]) -> None:
    """Write each frame as CSV (text as read, no index, Unix line endings) under a temporary sibling of
    `dest`, then rename it to `dest`; on any failure the temporary folder is removed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        scratch.chmod(0o755)  # mkdtemp's 0o700 would hide the files from a sandbox run as another user
        for name, frame in frames.items():
            path = scratch / name
            path.parent.mkdir(exist_ok=True)
            frame.to_csv(path, index=False, lineterminator="\n")
        scratch.rename(dest)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
