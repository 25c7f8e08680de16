"""What a bundled competition declares: `CompetitionSpec`, one per competition, read by `writer`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class CompetitionSpec:
    """One bundled competition: its data, its metric and the words of its Kaggle-style page.

    Attributes:
        slug: the competition's slug, also its folder name (e.g. ``"penguins-species"``).
        name: the page title.
        metric: a name in `rl_core.metrics.METRICS`.
        target_columns: the columns a submission predicts, in order; they end the frame `load` returns.
        load: returns the whole dataset, one row per example: feature columns, then `target_columns`,
            targets already in their graded form (0/1 labels, one-hot classes, ...). No id column.
        fields: a description of every column `load` returns, features and targets, keyed by column.
        overview: Markdown paragraphs saying what the task is and why it is interesting.
        source: Markdown: where the data comes from (the PyPI package and the original citation).
        seed: seeds the train/test split and the ids, so the bundle is the same on every build.
        stratify: split so that train and test hold the same proportion of each target value.
        test_fraction: the share of rows that go to the test set.
        evaluation_note: Markdown appended to the page's Evaluation section (what the columns hold).
        id_column: the name of the id column every CSV starts with.
        time_limit_s: wall-clock seconds a solution program may run.
        memory_mb: the memory a solution program may use.
        public_writer: writes public/'s training and test files from the split frames (train with the
            targets, test without), e.g. as JSON records or image files, as
            ``public_writer(spec, train, test, public_dir)``; None writes ``train.csv`` and ``test.csv``.
        data_files: Markdown bullets naming the training and test files, for a `public_writer` whose
            files are not ``train.csv`` and ``test.csv``.
    """

    slug: str
    name: str
    metric: str
    target_columns: tuple[str, ...]
    load: Callable[[], pd.DataFrame]
    fields: Mapping[str, str]
    overview: str
    source: str
    seed: int
    stratify: bool = False
    test_fraction: float = 0.2
    evaluation_note: str = ""
    id_column: str = "id"
    time_limit_s: int = 300
    memory_mb: int = 2048
    public_writer: Callable[[CompetitionSpec, pd.DataFrame, pd.DataFrame, Path], None] | None = None
    data_files: str = ""
