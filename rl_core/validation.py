"""Derive a validation competition from a competition's public files (issue 28's reward source
``validation``), so that the agent never sees a score computed from the hidden answers.

The public folder's labelled training table is split, seeded, into the rows the agent trains on and the
validation rows, whose features become the derived test table and whose labels become the derived answers.
The metric, the id column, the graded columns, the limits and the leaderboard stay the same:

```
dest/public/train.csv              the training rows kept, every column as in the real training table
dest/public/test.csv               the validation rows, with the real test.csv's columns that train.csv has
dest/public/sample_submission.csv  the validation ids, each with the real sample submission's prediction
dest/answers.csv                   the validation ids and the graded columns (outside public/)
```

How rows are split (`ValidationSettings`):

- by default, a seeded shuffle, stratified by class for a classification target (a label metric, or a
  probability metric whose answers are classes) when every class has two rows and both sides can hold one of
  each; otherwise a plain seeded shuffle;
- `group_column`: rows sharing a value stay on one side (scikit-learn's GroupShuffleSplit: `fraction` is the
  share of groups, not of rows); not stratified;
- `time_column`: rows sorted by that column (numbers, else dates), the latest `fraction` of them validate;
  no shuffle. Rows sharing the boundary time may fall on both sides, in file order.

Rows without a label (an empty graded or label cell) never validate: they stay in train, even when their
group validates or their time is late (they carry features only, as a real test set does). Every cell is
read and written as text, so values keep their spelling; the same files and settings write the same bytes.

When a split can be made (`validation_plan`, which reads only public files): the public folder holds exactly
a labelled training table (the one CSV besides the test table that holds every graded column, or, under a
probability metric, a label column whose values name the graded columns, ``<class>`` or
``<label>_<class>``, from which one-hot answers are built), a test table (a CSV named like ``test.csv``) and
a sample submission (named like ``sample_submission.csv``, with the id and graded columns).
Not done: any other public file (images/, JSON records, a second CSV) is refused rather than split, since rows
may key it; the real test set's shift from train (a later period, unseen groups) is imitated only through
`group_column` or `time_column`; the hidden answers are never read here, so nothing checks that the
validation answers look like them.

>>> ValidationSettings(seed=0, group_column="patient", time_column="day")
Traceback (most recent call last):
...
ValueError: Set group_column or time_column, not both ('patient', 'day').
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupShuffleSplit, train_test_split

from rl_core.environment import TaskFiles
from rl_core.grading import GradingSpec, grade_frames
from rl_core.metrics import get_metric

SHOWN = 3
"""How many file or column names a refusal names before "and N more"."""


@dataclass(frozen=True)
class ValidationSettings:
    """How the labelled training rows are split. Validated on construction (ValueError)."""

    seed: int
    """Seeds the shuffle (the same seed and files give the same split)."""
    fraction: float = 0.2
    """The share of labelled rows (of groups, with `group_column`) that become validation rows, in (0, 1)."""
    group_column: str = ""
    """A training-table column whose rows sharing a value stay on one side; "" for none."""
    time_column: str = ""
    """A training-table column of numbers or dates: its latest rows validate; "" for a shuffled split."""

    def __post_init__(self) -> None:
        if not 0 < self.fraction < 1:
            raise ValueError(f"The validation fraction must be between 0 and 1, not {self.fraction}.")
        if self.group_column and self.time_column:
            raise ValueError(
                f"Set group_column or time_column, not both ({self.group_column!r}, {self.time_column!r})."
            )


@dataclass(frozen=True)
class Plan:
    """Which public file plays which part in a validation split; made by `validation_plan`.

    Attributes:
        train_file, test_file, sample_file: names under the public folder of the labelled training table,
            the test table and the sample submission.
        id_column: the grading spec's id column.
        ids_generated: the training table lacks the id column, so validation rows get the ids 1..N.
        label_column: the training table's column whose values name the graded columns (answers are one-hot
            0/1 columns built from it); "" when the training table holds every graded column.
        classes: with `label_column`, the label value each graded column stands for (in the spec's order;
            one graded column: the positive class of two); else ().
        test_columns: the derived test.csv's columns, in the real test.csv's order (the id column first
            when the real one lacks it).
        notes: sentences for people about what the split does besides the obvious.
    """

    train_file: str
    test_file: str
    sample_file: str
    id_column: str
    ids_generated: bool
    label_column: str
    classes: tuple[str, ...]
    test_columns: tuple[str, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refusal:
    """Why no validation split can be made: one sentence, e.g. "no labelled training table: ..."."""

    reason: str


class _Refused(Exception):
    """A planning check failed; the message becomes the Refusal's reason."""


# -- planning, from the public files alone -----------------------------------------------------------------


def validation_plan(
    public_dir: Path, grading: GradingSpec, settings: ValidationSettings | None = None
) -> Plan | Refusal:
    """Whether a validation split of `public_dir` can be made for `grading`, and from which files.

    Reads the public CSV headers (and the training table's id, label or setting columns), never the hidden
    answers. `settings`, when given, are checked too (their columns must be in the training table).

    Returns:
        a `Plan`, or a `Refusal` naming what is missing or in the way.
    """
    try:
        return _plan(Path(public_dir), grading, settings)
    except _Refused as refusal:
        return Refusal(str(refusal))


def _plan(public_dir: Path, grading: GradingSpec, settings: ValidationSettings | None) -> Plan:
    train, test, sample, label, classes = _files(public_dir, grading)
    header, test_header = _header(public_dir, train), _header(public_dir, test)
    _check_sample(sample, _header(public_dir, sample), grading)
    _check_settings(train, header, grading, settings)
    id_column = grading.id_column
    ids_generated = id_column not in header
    if not ids_generated:
        _check_ids(public_dir / train, id_column)
    labels = {*grading.target_columns, label}
    features = [c for c in test_header if c != id_column and c in header and c not in labels]
    if not features:
        raise _Refused(f"{test} shares no column with {train} besides the id")
    absent = [repr(c) for c in test_header if c != id_column and c not in header]
    notes = (
        f"{train} has no {id_column!r} column: validation rows get the ids 1..N." if ids_generated else "",
        f"The answers are one-hot columns built from {train}'s label column {label!r}." if label else "",
        f"{test}'s columns {_few(absent)} are not in {train}: the validation test.csv lacks them."
        if absent
        else "",
    )
    test_columns = tuple(c for c in test_header if c == id_column or c in features)
    if id_column not in test_columns:
        test_columns = (id_column, *test_columns)
    return Plan(train, test, sample, id_column, ids_generated, label, classes, test_columns, _kept(notes))


def _kept(notes: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(note for note in notes if note)


def _files(public_dir: Path, grading: GradingSpec) -> tuple[str, str, str, str, tuple[str, ...]]:
    """(training table, test table, sample submission, label column or "", classes): the public files'
    names by part, after checking that the folder holds nothing else."""
    if not public_dir.is_dir():
        raise _Refused(f"the public folder {public_dir} does not exist")
    files = sorted(p.relative_to(public_dir).as_posix() for p in public_dir.rglob("*") if p.is_file())
    csvs = [name for name in files if "/" not in name and name.lower().endswith(".csv")]
    samples = [name for name in csvs if "sample" in name.lower() or "submission" in name.lower()]
    tests = [name for name in csvs if "test" in name.lower() and name not in samples]
    train, label, classes = _training_table(
        public_dir, [c for c in csvs if c not in samples + tests], grading
    )
    test = _one(tests, "test table (a CSV named like test.csv)")
    sample = _one(samples, "sample submission (a CSV named like sample_submission.csv)")
    _refuse_other_files([name for name in files if name not in (train, test, sample)])
    return train, test, sample, label, classes


def _one(names: list[str], what: str) -> str:
    if not names:
        raise _Refused(f"no {what} among the public files")
    if len(names) > 1:
        raise _Refused(f"more than one {what}: {_few(names)}")
    return names[0]


def _training_table(
    public_dir: Path, candidates: list[str], grading: GradingSpec
) -> tuple[str, str, tuple[str, ...]]:
    """(file name, label column or "", classes) of the one candidate CSV that holds the labels."""
    found = []
    for name in candidates:
        labels = _labels(public_dir / name, grading)
        if labels is not None:
            found.append((name, *labels))
    if len(found) > 1:
        raise _Refused(f"more than one public CSV holds the targets ({_few([f[0] for f in found])})")
    if not found:
        targets = ", ".join(repr(c) for c in grading.target_columns)
        raise _Refused(f"no labelled training table: no public CSV holds the target column(s) {targets}")
    return found[0]


def _labels(path: Path, grading: GradingSpec) -> tuple[str, tuple[str, ...]] | None:
    """("", ()) when `path` holds every graded column; (label column, classes) when, under a probability
    metric, one of its columns names them; None otherwise."""
    header = _header(path.parent, path.name)
    if all(c in header for c in grading.target_columns):
        return "", ()
    if get_metric(grading.metric).prediction != "probability":
        return None
    table = _read(path)
    for column in header:
        values = sorted(set(table[column].str.strip()) - {""})
        classes = label_classes(column, values, grading.target_columns)
        if column != grading.id_column and classes is not None:
            return column, classes
    return None


def label_classes(column: str, values: Sequence[str], targets: Sequence[str]) -> tuple[str, ...] | None:
    """The label value each graded column of `targets` stands for, when `column`'s distinct `values` name
    them (a graded column is ``<value>`` or ``<column>_<value>``); None when they do not.

    Several graded columns: every value names one and every one is named. One graded column: the values are
    two classes, and the column names one of them (the positive class).

    >>> label_classes("author", ["EAP", "HPL"], ("EAP", "HPL"))
    ('EAP', 'HPL')
    >>> label_classes("species", ["cat", "dog"], ("species_dog",)), label_classes("n", ["1", "2"], ("x",))
    (('dog',), None)
    """
    named = {g: v for v in values for g in (v, f"{column}_{v}") if g in targets}
    if len(targets) == 1:
        fits = len(values) == 2 and targets[0] in named
    else:
        fits = set(named) == set(targets) and len(set(named.values())) == len(values)
    return tuple(named[g] for g in targets) if fits else None


def _refuse_other_files(others: list[str]) -> None:
    if others:
        shown = sorted({name.split("/")[0] + "/" if "/" in name else name for name in others})
        raise _Refused(
            f"public files besides the tables ({_few(shown)}) may be keyed by row; "
            "a row-level split cannot follow them"
        )


def _check_sample(sample: str, header: list[str], grading: GradingSpec) -> None:
    missing = [c for c in (grading.id_column, *grading.target_columns) if c not in header]
    if missing:
        raise _Refused(
            f"the sample submission {sample} lacks the column(s) {_few([repr(c) for c in missing])}"
        )


def _check_settings(
    train: str, header: list[str], grading: GradingSpec, settings: ValidationSettings | None
) -> None:
    columns = {"group": settings.group_column, "time": settings.time_column} if settings else {}
    for kind, column in columns.items():
        if column and column not in header:
            raise _Refused(f"the {kind} column {column!r} is not in {train}")
        if column and column in grading.target_columns:
            raise _Refused(f"the {kind} column {column!r} is a graded column")


def _check_ids(path: Path, id_column: str) -> None:
    ids = _read(path, [id_column])[id_column].str.strip()
    if (ids == "").any() or ids.duplicated().any():
        raise _Refused(f"the id column {id_column!r} of {path.name} has empty or repeated ids")


def _few(names: Sequence[str]) -> str:
    """
    >>> _few(["a", "b", "c", "d", "e"])
    'a, b, c and 2 more'
    """
    shown = ", ".join(names[:SHOWN])
    return shown if len(names) <= SHOWN else f"{shown} and {len(names) - SHOWN} more"


def _header(public_dir: Path, name: str) -> list[str]:
    return [str(c) for c in _read(public_dir / name, nrows=0).columns]


def _read(path: Path, columns: list[str] | None = None, nrows: int | None = None) -> pd.DataFrame:
    """Every cell of a public CSV as text, "" when empty, as `rl_core.grading` reads a CSV."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(
                path, dtype=str, keep_default_na=False, index_col=False, encoding="utf-8-sig",
                usecols=columns, nrows=nrows,
            )  # fmt: skip
    except (pd.errors.ParserError, pd.errors.ParserWarning, pd.errors.EmptyDataError, ValueError) as error:
        raise _Refused(
            f"{path.name} is not a readable CSV file ({' '.join(str(error).split())[:120]})"
        ) from None


# -- the split ---------------------------------------------------------------------------------------------


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
        return _read(public_dir / name)
    except _Refused as error:
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
