"""Whether and how a competition's public files can be split for validation, read from them alone
(the package docstring says what a split needs and why it refuses)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rl_core.grading import GradingSpec
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


class RefusedSplit(Exception):
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
    except RefusedSplit as refusal:
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
        raise RefusedSplit(f"{test} shares no column with {train} besides the id")
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
        raise RefusedSplit(f"the public folder {public_dir} does not exist")
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
        raise RefusedSplit(f"no {what} among the public files")
    if len(names) > 1:
        raise RefusedSplit(f"more than one {what}: {_few(names)}")
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
        raise RefusedSplit(f"more than one public CSV holds the targets ({_few([f[0] for f in found])})")
    if not found:
        targets = ", ".join(repr(c) for c in grading.target_columns)
        raise RefusedSplit(f"no labelled training table: no public CSV holds the target column(s) {targets}")
    return found[0]


def _labels(path: Path, grading: GradingSpec) -> tuple[str, tuple[str, ...]] | None:
    """("", ()) when `path` holds every graded column; (label column, classes) when, under a probability
    metric, one of its columns names them; None otherwise."""
    header = _header(path.parent, path.name)
    if all(c in header for c in grading.target_columns):
        return "", ()
    if get_metric(grading.metric).prediction != "probability":
        return None
    table = read_public_csv(path)
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
        raise RefusedSplit(
            f"public files besides the tables ({_few(shown)}) may be keyed by row; "
            "a row-level split cannot follow them"
        )


def _check_sample(sample: str, header: list[str], grading: GradingSpec) -> None:
    missing = [c for c in (grading.id_column, *grading.target_columns) if c not in header]
    if missing:
        raise RefusedSplit(
            f"the sample submission {sample} lacks the column(s) {_few([repr(c) for c in missing])}"
        )


def _check_settings(
    train: str, header: list[str], grading: GradingSpec, settings: ValidationSettings | None
) -> None:
    columns = {"group": settings.group_column, "time": settings.time_column} if settings else {}
    for kind, column in columns.items():
        if column and column not in header:
            raise RefusedSplit(f"the {kind} column {column!r} is not in {train}")
        if column and column in grading.target_columns:
            raise RefusedSplit(f"the {kind} column {column!r} is a graded column")


def _check_ids(path: Path, id_column: str) -> None:
    ids = read_public_csv(path, [id_column])[id_column].str.strip()
    if (ids == "").any() or ids.duplicated().any():
        raise RefusedSplit(f"the id column {id_column!r} of {path.name} has empty or repeated ids")


def _few(names: Sequence[str]) -> str:
    """
    >>> _few(["a", "b", "c", "d", "e"])
    'a, b, c and 2 more'
    """
    shown = ", ".join(names[:SHOWN])
    return shown if len(names) <= SHOWN else f"{shown} and {len(names) - SHOWN} more"


def _header(public_dir: Path, name: str) -> list[str]:
    return [str(c) for c in read_public_csv(public_dir / name, nrows=0).columns]


def read_public_csv(path: Path, columns: list[str] | None = None, nrows: int | None = None) -> pd.DataFrame:
    """Every cell of a public CSV as text, "" when empty, as `rl_core.grading` reads a CSV."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(
                path, dtype=str, keep_default_na=False, index_col=False, encoding="utf-8-sig",
                usecols=columns, nrows=nrows,
            )  # fmt: skip
    except (pd.errors.ParserError, pd.errors.ParserWarning, pd.errors.EmptyDataError, ValueError) as error:
        raise RefusedSplit(
            f"{path.name} is not a readable CSV file ({' '.join(str(error).split())[:120]})"
        ) from None
