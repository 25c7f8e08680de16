"""The kind of data a competition ships, and its tables as the features and programs read them.

Kinds (`DATA_KINDS`), decided from the public files and the metric alone (`data_kind`):

- ``"text_span"``: the metric is word-level Jaccard (``"jaccard"``): each test row's prediction is a span
  of one of its text columns (tweet-sentiment-extraction);
- ``"json"``: no ``train.csv``, but ``train.json`` or ``train.jsonl`` records (random-acts-of-pizza); the
  tables are the records flattened (`rl_core.public_files.flatten_records`);
- ``"images"``: image files under the public folder, named by a column of ``train.csv`` (the id column, or
  the first column whose values are image file names without their suffix), as in leaf-classification
  or plant-pathology; the table columns other than that one are not used;
- ``"tabular"``: everything else, ``train.csv`` and ``test.csv``.

Not done: images named by a path column with folders in it; train and test images that share a stem;
several JSON files joined by key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from rl_core.public_files import flatten_records, image_files, image_summary, read_records, records_path

DATA_KINDS = ("tabular", "json", "images", "text_span")
SPAN_METRICS = frozenset({"jaccard"})
IMAGE_MATCH_ROWS = 100
IMAGE_MATCH_SHARE = 0.5
"""A column names the images when at least this share of its first `IMAGE_MATCH_ROWS` values are stems of
image files."""
CONTEXT_MAX_VALUES = 50
"""A text-span task's other object columns with at most this many distinct values are its context."""


def table_names(public_dir: Path) -> tuple[str, str]:
    """(train file, test file) names: the CSVs, or the JSON records when there is no train.csv."""
    public_dir = Path(public_dir)
    if not (public_dir / "train.csv").is_file():
        train, test = records_path(public_dir, "train"), records_path(public_dir, "test")
        if train is not None and test is not None:
            return train.name, test.name
    return "train.csv", "test.csv"


def read_table(path: Path, max_rows: int) -> pd.DataFrame:
    """A CSV's first `max_rows` rows, or a JSON records file flattened (every record: JSON is read whole)."""
    if path.suffix.lower() in (".json", ".jsonl"):
        return flatten_records(read_records(path))
    return pd.read_csv(path, nrows=max_rows, low_memory=False)


def image_column(public_dir: Path, train: pd.DataFrame, id_column: str) -> str | None:
    """The column of `train` whose values name the image files (the id column first), or None."""
    stems = {path.stem for path in image_files(public_dir)}
    if not stems:
        return None
    ordered = [id_column, *(c for c in train.columns if c != id_column)]
    for column in ordered:
        values = train[column].head(IMAGE_MATCH_ROWS).astype(str)
        if len(values) and values.isin(stems).mean() >= IMAGE_MATCH_SHARE:
            return str(column)
    return None


def data_kind(public_dir: Path, *, metric: str, id_column: str) -> str:
    """One of `DATA_KINDS` for the competition whose public files are in `public_dir`."""
    public_dir = Path(public_dir)
    if metric in SPAN_METRICS:
        return "text_span"
    train_name, _ = table_names(public_dir)
    if train_name != "train.csv":
        return "json"
    head = pd.read_csv(public_dir / "train.csv", nrows=IMAGE_MATCH_ROWS, low_memory=False)
    return "images" if image_column(public_dir, head, id_column) is not None else "tabular"


def image_features(public_dir: Path, train: pd.DataFrame, id_column: str) -> dict[str, Any]:
    """``image_column``, ``n_images``, ``image_mode`` ("L" for grey, else "RGB": what programs convert to)
    and ``image_size`` ([width, height], the most common probed size)."""
    summary = image_summary(public_dir)
    modes: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for entry in summary:
        for mode, n in entry["modes"].items():
            modes[mode] = modes.get(mode, 0) + n
        for size, n in entry["sizes"].items():
            sizes[size] = sizes.get(size, 0) + n
    grey = max(modes, key=modes.__getitem__, default="L") in ("L", "1", "I", "I;16", "F")
    size = max(sizes, key=sizes.__getitem__, default="0x0")
    return {
        "image_column": image_column(public_dir, train, id_column),
        "n_images": sum(entry["count"] for entry in summary),
        "image_mode": "L" if grey else "RGB",
        "image_size": [int(part) for part in size.split("x")],
    }


def span_text_column(train: pd.DataFrame, test: pd.DataFrame, target: str, id_column: str) -> str:
    """The test column whose training values contain the target span most often.

    Raises:
        ValueError: train.csv has no column that holds its spans.
    """
    candidates = [
        c
        for c in test.columns
        if c != id_column and c in train.columns and not pd.api.types.is_numeric_dtype(test[c])
    ]
    rows = train.dropna(subset=[target]).head(500)

    def share(column: str) -> float:
        pairs = zip(rows[column].astype(str), rows[target].astype(str), strict=True)
        return sum(span in text for text, span in pairs) / max(1, len(rows))

    best = max(candidates, key=share, default=None)
    if best is None or share(best) == 0:
        raise ValueError(f"train.csv has no text column that holds the spans of {target!r}.")
    return str(best)


def span_features(train: pd.DataFrame, test: pd.DataFrame, id_column: str, target: str) -> dict[str, Any]:
    """``text_columns`` ([the text the spans come from]), ``categorical_columns`` (the context columns,
    e.g. sentiment) and the other column facts of a text-span task."""
    text = span_text_column(train, test, target, id_column)
    context = [
        c
        for c in test.columns
        if c not in (id_column, text) and c in train.columns and train[c].nunique() <= CONTEXT_MAX_VALUES
    ]
    features = [text, *context]
    both = pd.concat([train[features], test[features]], ignore_index=True)
    return {
        "feature_columns": features,
        "n_features": len(features),
        "numeric_columns": [],
        "categorical_columns": context,
        "text_columns": [text],
        "missing_fraction": float(both.isna().to_numpy().mean()),
    }
