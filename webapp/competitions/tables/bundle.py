"""Split a labelled table by a checked `Plan` and write it as a competition bundle (DESIGN.md §7).

```
competition.yaml     name, slug, metric, id_column, target_columns, time_limit_s, memory_mb
description.md       what was predicted from what, the files, the columns, the metric
public/train.csv     id, features, the targets as the table holds them
public/test.csv      id, features
public/sample_submission.csv   id, the graded columns, one constant prediction learnt on train
private/answers.csv  id, the graded columns of the test rows (hidden)
```
As in MLE-bench's `prepare.py` files: the split is seeded (`SPLIT_SEED`) and stratified by class for a
classification target, so the same table and choices write the same bundle. A generated id is a shuffled
1..N, so it does not reveal the table's row order. The graded columns are the targets themselves, except
under a probability metric (roc_auc, log_loss, roc_auc_ovr) for class labels: there answers and
submissions hold one column per class named ``<target>_<class>`` (0/1 in the answers, probabilities in a
submission), or for two classes the single column P(positive class), where the positive class is 1 (or
the last label in sorted order). train.csv keeps the original label column, like MLE-bench's spooky-author
data. Plain pandas; writes only under `dest`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from sklearn.model_selection import train_test_split

from rl_core.grading import GradingSpec, grade_frames
from rl_core.metrics import get_metric, positive_label
from webapp.competitions.tables.files import Table, TableError
from webapp.competitions.tables.proposal import Plan, column_type, is_zero_one, numbers, present

SPLIT_SEED = 0
TIME_LIMIT_S = 300
MEMORY_MB = 2048
HEAD_ROWS = 5


@dataclass(frozen=True)
class Written:
    """What `write_bundle` wrote: rows on each side and the columns answers and submissions hold."""

    train_rows: int
    test_rows: int
    graded_columns: tuple[str, ...]


def graded_columns(table: Table, plan: Plan) -> tuple[str, ...]:
    """The columns (besides the id) of the answers and of every submission."""
    targets = plan.choices.target_columns
    if get_metric(plan.choices.metric).prediction != "probability" or plan.kind == "multilabel":
        return targets
    if plan.kind == "binary":
        if is_zero_one(table.frame[targets[0]]):
            return targets
        return (f"{targets[0]}_{positive_label(plan.classes)}",)
    columns = tuple(f"{targets[0]}_{label}" for label in plan.classes)
    taken = [c for c in columns if c in table.frame.columns or c == plan.id_column]
    if taken or len(set(columns)) < len(columns):
        raise TableError(f"{table.name}: the class column {(taken or columns)[0]!r} would clash; rename it.")
    return columns


def split(table: Table, plan: Plan, seed: int = SPLIT_SEED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test): the table's rows with the id column first, split as `plan` says."""
    frame = table.frame.reset_index(drop=True)
    if plan.choices.id_column is None:
        frame.insert(0, plan.id_column, np.random.default_rng(seed).permutation(len(frame)) + 1)
    else:
        frame = frame[[plan.id_column, *[c for c in frame.columns if c != plan.id_column]]]
    strata = frame[plan.choices.target_columns[0]] if plan.stratified else None
    train, test = train_test_split(
        frame, test_size=plan.choices.test_fraction, random_state=seed, stratify=strata
    )
    if plan.choices.id_column is None:  # shuffled ids: sorting by them hides the table's order
        return train.sort_values(plan.id_column), test.sort_values(plan.id_column)
    return train.sort_index(), test.sort_index()


def encode(rows: pd.DataFrame, table: Table, plan: Plan) -> pd.DataFrame:
    """(N, C) graded columns of `rows`: the targets as they are, or 0/1 per class (see module docstring)."""
    columns = graded_columns(table, plan)
    targets = plan.choices.target_columns
    if columns == targets:
        return rows[list(targets)].reset_index(drop=True)
    labels = rows[targets[0]].str.strip().to_numpy()
    if plan.kind == "binary":
        positive = positive_label(plan.classes)
        return pd.DataFrame({columns[0]: (labels == positive).astype(int)})
    return pd.DataFrame(
        {c: (labels == label).astype(int) for c, label in zip(columns, plan.classes, strict=True)}
    )


def answers_frame(test: pd.DataFrame, table: Table, plan: Plan) -> pd.DataFrame:
    return with_ids(test, encode(test, table, plan), plan)


def sample_submission(train: pd.DataFrame, test: pd.DataFrame, table: Table, plan: Plan) -> pd.DataFrame:
    """The trivial constant prediction learnt on train: the commonest label, class priors, or means."""
    encoded = encode(train, table, plan)
    if get_metric(plan.choices.metric).prediction == "label":
        constants = {c: encoded[c].mode().iloc[0] for c in encoded.columns}
    else:
        constants = {c: float(pd.to_numeric(encoded[c]).mean()) for c in encoded.columns}
    sample = pd.DataFrame({c: [value] * len(test) for c, value in constants.items()})
    return with_ids(test, sample, plan)


def with_ids(rows: pd.DataFrame, values: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    ids = pd.DataFrame({plan.id_column: rows[plan.id_column].to_numpy()})
    return pd.concat([ids, values.reset_index(drop=True)], axis=1)


def write_bundle(
    table: Table, plan: Plan, dest: Path, *, slug: str, name: str, seed: int = SPLIT_SEED
) -> Written:
    """Write the bundle into `dest` (created). Checks first that the metric grades the sample submission."""
    train, test = split(table, plan, seed)
    answers = answers_frame(test, table, plan)
    sample = sample_submission(train, test, table, plan)
    columns = graded_columns(table, plan)
    check_gradable(table, plan, sample, answers, columns)
    (dest / "public").mkdir(parents=True)
    (dest / "private").mkdir()
    targets = list(plan.choices.target_columns)
    write_csv(train[[plan.id_column, *plan.features, *targets]], dest / "public" / "train.csv")
    write_csv(test[[plan.id_column, *plan.features]], dest / "public" / "test.csv")
    write_csv(sample, dest / "public" / "sample_submission.csv")
    write_csv(answers, dest / "private" / "answers.csv")
    spec = competition_spec(plan, slug=slug, name=name, columns=columns)
    (dest / "competition.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    written = Written(train_rows=len(train), test_rows=len(test), graded_columns=columns)
    (dest / "description.md").write_text(description(table, plan, name, written), encoding="utf-8")
    return written


def check_gradable(table: Table, plan: Plan, sample, answers, columns: tuple[str, ...]) -> None:
    """TableError when the metric cannot grade these answers (the grader's own reason, e.g. f1's labels)."""
    metric = plan.choices.metric
    try:
        grade = grade_frames(sample, answers, GradingSpec(metric, plan.id_column, columns))
    except ValueError as error:
        raise TableError(f"{table.name}: the metric {metric!r} cannot grade this target ({error})") from None
    if not grade.valid:
        raise TableError(f"{table.name}: the metric {metric!r} cannot grade this target ({grade.error})")


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Without the index, with Unix line endings (as `bundled.writer` writes, without importing the
    bundled competitions)."""
    frame.to_csv(path, index=False, lineterminator="\n")


def competition_spec(plan: Plan, *, slug: str, name: str, columns: tuple[str, ...]) -> dict:
    return {
        "name": name,
        "slug": slug,
        "metric": plan.choices.metric,
        "id_column": plan.id_column,
        "target_columns": list(columns),
        "time_limit_s": TIME_LIMIT_S,
        "memory_mb": MEMORY_MB,
    }


# -- what the page shows and description.md says -----------------------------------------------------------


@dataclass(frozen=True)
class ColumnSummary:
    name: str
    type: str  # integer, number or text
    missing: int
    distinct: int
    role: str  # id, target or feature


def column_summaries(table: Table, id_column: str | None, targets: tuple[str, ...]) -> list[ColumnSummary]:
    frame = table.frame
    return [
        ColumnSummary(
            name=str(c),
            type=column_type(frame[c]),
            missing=len(frame) - len(present(frame[c])),
            distinct=int(present(frame[c]).nunique()),
            role="id" if c == id_column else "target" if c in targets else "feature",
        )
        for c in frame.columns
    ]


def head(table: Table) -> tuple[list[str], list[list[str]]]:
    """(column names, the first HEAD_ROWS rows as text)."""
    first = table.frame.head(HEAD_ROWS)
    return [str(c) for c in first.columns], first.to_numpy().tolist()


def target_summary(table: Table, plan: Plan) -> list[tuple[str, str]]:
    """Class counts for a classification target, else each target's range and mean."""
    if plan.stratified:
        counts = present(table.frame[plan.choices.target_columns[0]]).value_counts()
        return [(str(label), f"{counts[label]} rows") for label in plan.classes]
    rows = []
    for target in plan.choices.target_columns:
        values = numbers(table.frame[target])
        assert values is not None  # a checked plan has numeric targets here
        rows.append((target, f"{values.min():g} to {values.max():g}, mean {values.mean():.4g}"))
    return rows


POSITIVE_CLASS_PHRASES = ("P(label = 1)", "the positive label 1")
"""How rl_core.metrics' descriptions name a binary metric's positive class; `metric_sentence` names it."""


def metric_sentence(plan: Plan) -> str:
    """The metric's description, with a binary target's positive class named as the table holds it.

    >>> from webapp.competitions.tables.proposal import Choices
    >>> plan = Plan(Choices(None, ("label",), "roc_auc", 0.2), "id", "binary", ("ham", "spam"), ())
    >>> metric_sentence(plan)
    'Area under the ROC curve of P(label = "spam").'
    """
    description = get_metric(plan.choices.metric).description
    if plan.kind != "binary":
        return description
    target, positive = plan.choices.target_columns[0], positive_label(plan.classes)
    shown = positive if numbers(pd.Series([positive])) is not None else f'"{positive}"'
    named = {"P(label = 1)": f"P({target} = {shown})", "the positive label 1": f"the class {shown}"}
    for phrase in POSITIVE_CLASS_PHRASES:
        description = description.replace(phrase, named[phrase])
    return description


def description(table: Table, plan: Plan, name: str, written: Written) -> str:
    metric = get_metric(plan.choices.metric)
    targets = ", ".join(f"`{t}`" for t in plan.choices.target_columns)
    columns = "\n".join(
        f"| `{c.name}` | {c.role} | {c.type} | {c.missing} |"
        for c in column_summaries(table, plan.id_column, plan.choices.target_columns)
        if c.role != "id"
    )
    direction = "higher is better" if metric.higher_is_better else "lower is better"
    graded = ", ".join(f"`{c}`" for c in written.graded_columns)
    split_note = ", stratified by class" if plan.stratified else ""
    return f"""# {name}

Predict {targets} for each row of `test.csv`. Made from the table `{table.name}`
({len(table.frame)} rows): {written.train_rows} rows for training and {written.test_rows} held out as the
test set (seeded split{split_note}).

## Data

- `train.csv`: `{plan.id_column}`, the features and {targets}.
- `test.csv`: `{plan.id_column}` and the features.
- `sample_submission.csv`: the submission format, with one constant prediction.

| column | role | type | missing |
|---|---|---|---|
{columns}

## Evaluation

`{metric.name}`: {metric_sentence(plan).rstrip(".")} ({direction}, perfect {metric.perfect:g}).
A submission has the columns `{plan.id_column}`, {graded}, one row per test id.
{evaluation_note(plan, written)}
"""


def evaluation_note(plan: Plan, written: Written) -> str:
    kind = get_metric(plan.choices.metric).prediction
    if kind == "probability" and written.graded_columns != plan.choices.target_columns:
        return "Each graded column holds the probability that the row belongs to the class it names."
    if kind == "probability":
        return "Each graded column holds the probability that the target is 1."
    return "Each graded column holds the predicted label." if kind == "label" else "Each holds a number."
