"""Write a competition bundle (DESIGN.md §7) from a `CompetitionSpec`: split, ids, files.

```
competition.yaml   name, slug, metric, id_column, target_columns, time_limit_s, memory_mb
description.md     the Kaggle-style page (`description.render_description`)
public/            train.csv (id, features, targets), test.csv (id, features), sample_submission.csv;
                   or, for a spec with a `public_writer`, the files it writes (JSON records, images)
private/answers.csv (id, targets)
```
The split and the ids come from the spec's seed alone, so two builds write identical bytes. Ids are a
shuffled range 1..N over all rows, and each file is sorted by id, so neither ids nor row order reveal
the original order of the dataset. The sample submission is the trivial constant prediction of the
metric's kind, computed on train: the most frequent label (or text), the class priors (or P(1)), or the
mean.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from sklearn.model_selection import train_test_split

from rl_core.metrics import get_metric
from webapp.competitions.bundled.description import render_description
from webapp.competitions.bundled.spec import CompetitionSpec

PROBABILITY_DECIMALS = 6
"""Constant predictions are rounded so the sample submission stays readable."""


def write_bundle(spec: CompetitionSpec, dest: Path) -> None:
    """Write `spec`'s bundle into the folder `dest` (created if missing, expected empty)."""
    frame = spec.load()
    check_frame(spec, frame)
    train, test = split(spec, frame)
    sample = constant_submission(spec, train, test)
    features = [column for column in frame.columns if column not in spec.target_columns]
    (dest / "public").mkdir(parents=True, exist_ok=True)
    (dest / "private").mkdir(exist_ok=True)
    if spec.public_writer is None:
        write_csv(train, dest / "public" / "train.csv")
        write_csv(test[[spec.id_column, *features]], dest / "public" / "test.csv")
    else:
        spec.public_writer(spec, train, test[[spec.id_column, *features]], dest / "public")
    write_csv(sample, dest / "public" / "sample_submission.csv")
    write_csv(test[[spec.id_column, *spec.target_columns]], dest / "private" / "answers.csv")
    (dest / "competition.yaml").write_text(competition_yaml(spec), encoding="utf-8")
    description = render_description(spec, n_train=len(train), n_test=len(test), sample=sample)
    (dest / "description.md").write_text(description, encoding="utf-8")


def check_frame(spec: CompetitionSpec, frame: pd.DataFrame) -> None:
    """ValueError unless the frame ends with the targets and every column has a description."""
    if tuple(frame.columns[-len(spec.target_columns) :]) != spec.target_columns:
        raise ValueError(f"{spec.slug}: the frame must end with the target columns {spec.target_columns}.")
    undescribed = [column for column in frame.columns if column not in spec.fields]
    unknown = [column for column in spec.fields if column not in frame.columns]
    if undescribed or unknown or spec.id_column in frame.columns:
        raise ValueError(f"{spec.slug}: undescribed columns {undescribed}, described but absent {unknown}.")


def split(spec: CompetitionSpec, frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test): seeded ids, then a seeded (optionally stratified) split, each sorted by id."""
    ids = np.random.default_rng(spec.seed).permutation(len(frame)) + 1
    frame = frame.reset_index(drop=True)
    frame.insert(0, spec.id_column, ids)
    strata = frame[list(spec.target_columns)].astype(str).agg("|".join, axis=1) if spec.stratify else None
    train, test = train_test_split(
        frame, test_size=spec.test_fraction, random_state=spec.seed, stratify=strata
    )
    return train.sort_values(spec.id_column), test.sort_values(spec.id_column)


def constant_submission(spec: CompetitionSpec, train: pd.DataFrame, test: pd.DataFrame) -> pd.DataFrame:
    """One row per test id holding the same trivial prediction, learnt from train."""
    kind = get_metric(spec.metric).prediction
    targets = train[list(spec.target_columns)]
    if kind == "label" or not all(pd.api.types.is_numeric_dtype(targets[c]) for c in targets):
        constants = {column: targets[column].mode().iloc[0] for column in spec.target_columns}
    else:  # "probability" (priors, or P(1)) and "value" (means) are both column means
        constants = {column: round(float(targets[column].mean()), PROBABILITY_DECIMALS) for column in targets}
    sample = pd.DataFrame({spec.id_column: test[spec.id_column].to_numpy()})
    for column, value in constants.items():
        sample[column] = value
    return sample


def competition_yaml(spec: CompetitionSpec) -> str:
    """The text of competition.yaml."""
    fields = {
        "name": spec.name,
        "slug": spec.slug,
        "metric": spec.metric,
        "id_column": spec.id_column,
        "target_columns": list(spec.target_columns),
        "time_limit_s": spec.time_limit_s,
        "memory_mb": spec.memory_mb,
    }
    return yaml.safe_dump(fields, sort_keys=False, allow_unicode=True)


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write `frame` without its index, with Unix line endings (the same bytes on every platform)."""
    frame.to_csv(path, index=False, lineterminator="\n")
