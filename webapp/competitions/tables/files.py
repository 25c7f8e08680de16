"""Read one uploaded table (a CSV, a JSON list of records, or JSON lines) into text cells.

Every cell is kept as the text it was written as ("007" stays "007"; JSON null becomes ""), so the files
written from it hold the user's own values. Errors are `TableError`s: one sentence naming the file.
Not done: tables larger than memory; spreadsheets (.xlsx).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from webapp.competitions.importing.bundles import BundleError


class TableError(BundleError):
    """The table or a choice about it was rejected; the message names the file and the problem."""


@dataclass(frozen=True)
class Table:
    """An uploaded table. `frame` holds every cell as text, "" where missing; `name` is the file's name."""

    name: str
    frame: pd.DataFrame


def read_table(path: Path, name: str | None = None) -> Table:
    """Read a CSV, a JSON list of records or JSON lines (by extension, else by the first character)."""
    name = name or path.name
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise TableError(f"{name}: not UTF-8 text.") from None
    if not text.strip():
        raise TableError(f"{name}: the file is empty.")
    suffix = Path(name).suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        frame = records_frame(json_lines(text, name), name)
    elif suffix == ".json" or (suffix != ".csv" and text.lstrip()[:1] in "[{"):
        frame = records_frame(json_records(text, name), name)
    else:
        frame = csv_frame(path, name)
    if frame.empty:
        raise TableError(f"{name}: the table has columns but no rows.")
    return Table(name=name, frame=frame)


def csv_frame(path: Path, name: str) -> pd.DataFrame:
    try:
        with warnings.catch_warnings():
            # A row longer than the header would otherwise lose its extra cells silently.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig", index_col=False)
    except pd.errors.EmptyDataError:
        raise TableError(f"{name}: the file is empty.") from None
    except (pd.errors.ParserError, pd.errors.ParserWarning, ValueError) as error:
        raise TableError(f"{name}: not a readable CSV file ({one_line(error)}).") from None


def json_records(text: str, name: str) -> list[Any]:
    try:
        records = json.loads(text)
    except json.JSONDecodeError as error:
        raise TableError(f"{name}: not readable JSON ({one_line(error)}).") from None
    if not isinstance(records, list):
        raise TableError(f'{name}: expected a JSON list of records, like [{{"a": 1}}, {{"a": 2}}].')
    return records


def json_lines(text: str, name: str) -> list[Any]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise TableError(f"{name}: line {number} is not readable JSON ({one_line(error)}).") from None
    return records


def records_frame(records: list[Any], name: str) -> pd.DataFrame:
    """Records as a frame of text cells; nested objects become dotted columns, lists become JSON text."""
    if not records:
        raise TableError(f"{name}: the file holds no records.")
    if not all(isinstance(record, dict) for record in records):
        raise TableError(f"{name}: every record must be a JSON object of column values.")
    frame = pd.json_normalize(records)
    return frame.apply(lambda column: column.map(cell_text)).astype(str)


def cell_text(value: Any) -> str:
    """A JSON value as the text a CSV cell would hold ("" for null).

    >>> cell_text(None), cell_text(3), cell_text(2.5), cell_text([1, 2])
    ('', '3', '2.5', '[1, 2]')
    """
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


def one_line(error: Exception) -> str:
    """The first sentence of a library's message, on one line, so the whole error stays one sentence.

    >>> one_line(ValueError("Expected 2 fields in line 3, saw 4. Error tokenizing data."))
    'Expected 2 fields in line 3, saw 4'
    """
    return " ".join(str(error).split()).split(". ")[0].rstrip(".")[:200]
