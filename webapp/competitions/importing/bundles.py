"""Validate a competition bundle (a folder, DESIGN.md §7) before anything is stored.

```
competition.yaml   name, slug, metric, id_column, target_columns, time_limit_s, memory_mb
description.md
public/            sample_submission.csv (required); train.csv, test.csv and any other files, in nested
                   folders: CSV, JSON/JSONL, text, images ...
private/           answers.csv (hidden)
leaderboard.csv    optional: a Kaggle leaderboard export with a `score` column
```
`validate_bundle` reads, never writes; every rejection is a `BundleError` whose message is one sentence
naming the file (its path inside the bundle) and the problem. Every public `*.csv` must parse, every
`*.json` / `*.jsonl` too (`public_formats`); other files are taken as they are. When `public/test.csv`
exists the ids of the answers and the sample submission must be its ids; without it (image, JSON or text
competitions) the answers must have the sample submission's ids. A cell counts as missing exactly when the
grader says so (`rl_core.grading.MISSING_SPELLINGS`), and the answers must be scorable by the metric: the
bundle is graded with its own sample submission, and whatever the grader refuses in the answers (text for
a value metric, a single class for ROC AUC, labels other than 0 and 1 for F1 ...) rejects the bundle.
Plain Python and pandas: no models, no database.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rl_core.grading import MISSING_SPELLINGS, GradingSpec, grade_submission
from rl_core.leaderboard import load_leaderboard_scores
from rl_core.metrics import UnknownMetricError, get_metric
from webapp.competitions.importing.public_formats import FormatError, count_records
from webapp.competitions.importing.sentences import human_bytes, lowercase_first, one_line, sample_of

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SAMPLE = "sample_submission.csv"
TEST = "test.csv"  # optional: when present, it fixes the ids the answers and sample submission must have
REQUIRED_FILES = ("competition.yaml", "description.md", "private/answers.csv", f"public/{SAMPLE}")
DEFAULT_TIME_LIMIT_S = 600.0
DEFAULT_MEMORY_MB = 4096
CSV_CHUNK_ROWS = 100_000  # extra public CSVs are parsed in chunks of this many rows, to bound memory


class BundleError(ValueError):
    """A bundle was rejected; the message names the file and what is wrong with it."""


@dataclass(frozen=True)
class BundleLimits:
    """Defaults as webapp.settings' PRACTICUM_BUNDLE_MAX_MB / _MAX_FILES / PRACTICUM_ZIP_MAX_RATIO."""

    max_total_bytes: int = 8192 * 1024 * 1024
    max_files: int = 50_000
    max_zip_ratio: float = 200.0  # uncompressed / compressed, per member and overall


@dataclass(frozen=True)
class BundleSpec:
    name: str
    slug: str
    metric: str
    id_column: str
    target_columns: tuple[str, ...]
    time_limit_s: float
    memory_mb: int

    @property
    def grading(self) -> GradingSpec:
        return GradingSpec(metric=self.metric, id_column=self.id_column, target_columns=self.target_columns)


@dataclass(frozen=True)
class PublicFile:
    name: str
    size_bytes: int
    rows: int | None  # data rows for CSVs, None otherwise


@dataclass(frozen=True)
class ValidatedBundle:
    root: Path
    spec: BundleSpec
    description: str
    public_files: tuple[PublicFile, ...]
    answers_path: Path
    leaderboard_path: Path | None
    leaderboard_scores: tuple[float, ...] | None
    baseline_score: float | None  # the sample submission's score (None: the metric leaves it undefined)


def validate_bundle(root: Path, limits: BundleLimits = BundleLimits()) -> ValidatedBundle:
    """Check every rule of a bundle folder and return what the importer needs. Raises BundleError."""
    check_tree(root, limits)
    spec = parse_spec(root / "competition.yaml")
    description = read_description(root / "description.md")
    frames = read_keyed_csvs(spec, root / "public")
    answers = read_csv(root / "private" / "answers.csv", "private/answers.csv")
    check_ids(spec, answers, "private/answers.csv")
    reference = ids_reference(frames)
    check_sample_submission(spec, frames[SAMPLE], reference)
    check_answers(spec, answers, reference, test=frames.get(TEST))
    public_files = list_public_files(root / "public", frames)
    baseline = baseline_score(spec, root)
    leaderboard = root / "leaderboard.csv"
    return ValidatedBundle(
        root=root,
        spec=spec,
        description=description,
        public_files=public_files,
        answers_path=root / "private" / "answers.csv",
        leaderboard_path=leaderboard if leaderboard.is_file() else None,
        leaderboard_scores=read_leaderboard(leaderboard) if leaderboard.is_file() else None,
        baseline_score=baseline,
    )


def check_tree(root: Path, limits: BundleLimits) -> None:
    """No symlinks, required files present, size and file count within limits."""
    if not root.is_dir():
        raise BundleError(f"{root.name}: expected a folder or a .zip file.")
    count, total = 0, 0
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_symlink():
            raise BundleError(f"{relative}: symbolic links are not allowed in a bundle.")
        if path.is_file():
            count += 1
            total += path.stat().st_size
    if count > limits.max_files:
        raise BundleError(f"The bundle has {count} files; at most {limits.max_files} are allowed.")
    if total > limits.max_total_bytes:
        raise BundleError(
            f"The bundle is {human_bytes(total)}; at most {human_bytes(limits.max_total_bytes)} is allowed."
        )
    for required in REQUIRED_FILES:
        if not (root / required).is_file():
            raise BundleError(f"{required}: the bundle has no such file.")


def read_keyed_csvs(spec: BundleSpec, public: Path) -> dict[str, pd.DataFrame]:
    """The sample submission and, when there is one, public/test.csv: parsed, with unique ids checked."""
    names = [name for name in (TEST, SAMPLE) if (public / name).is_file()]
    frames = {name: read_csv(public / name, f"public/{name}") for name in names}
    for name, frame in frames.items():
        check_ids(spec, frame, f"public/{name}")
    return frames


def ids_reference(frames: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, str]:
    """The frame whose ids every other file must match, and its label: test.csv if any, else the sample."""
    name = TEST if TEST in frames else SAMPLE
    return frames[name], f"public/{name}"


def parse_spec(path: Path) -> BundleSpec:
    """competition.yaml → BundleSpec, naming the field that is missing or malformed."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise BundleError(f"competition.yaml: not valid YAML ({one_line(error)}).") from None
    if not isinstance(raw, dict):
        raise BundleError("competition.yaml: expected a mapping of fields (name, slug, metric, ...).")
    metric = require_str(raw, "metric")
    try:
        get_metric(metric)
    except UnknownMetricError as error:
        raise BundleError(f"competition.yaml: {error}") from None
    slug = require_str(raw, "slug")
    if not SLUG_RE.match(slug) or len(slug) > 80:
        raise BundleError(f"competition.yaml: slug {slug!r} must be lowercase letters, digits and dashes.")
    spec = BundleSpec(
        name=require_str(raw, "name"),
        slug=slug,
        metric=metric,
        id_column=require_str(raw, "id_column"),
        target_columns=require_columns(raw),
        time_limit_s=require_positive(raw, "time_limit_s", DEFAULT_TIME_LIMIT_S),
        memory_mb=int(require_positive(raw, "memory_mb", DEFAULT_MEMORY_MB)),
    )
    check_grading(spec)
    return spec


def check_grading(spec: BundleSpec) -> GradingSpec:
    """The grading spec, once sure the metric takes this many target columns, none of them the id."""
    try:
        return spec.grading
    except ValueError as error:
        raise BundleError(f"competition.yaml: {lowercase_first(one_line(error))}") from None


def require_str(raw: dict[str, Any], field: str) -> str:
    value = raw.get(field)
    if not isinstance(value, str) or not value.strip():
        raise BundleError(f"competition.yaml: field {field!r} must be a non-empty string.")
    return value.strip()


def require_columns(raw: dict[str, Any]) -> tuple[str, ...]:
    value = raw.get("target_columns")
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise BundleError(
            "competition.yaml: field 'target_columns' must be a non-empty list of column names."
        )
    if len(set(value)) != len(value):
        raise BundleError("competition.yaml: field 'target_columns' lists a column twice.")
    return tuple(value)


def require_positive(raw: dict[str, Any], field: str, default: float) -> float:
    value = raw.get(field, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise BundleError(f"competition.yaml: field {field!r} must be a positive number, not {value!r}.")
    return float(value)


def read_description(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BundleError("description.md: not UTF-8 text.") from None
    if not text.strip():
        raise BundleError("description.md: the file is empty.")
    return text


def read_csv(path: Path, label: str) -> pd.DataFrame:
    """Parse a CSV with every column as text, so ids like "007" survive (`is_missing` finds empty cells)."""
    with csv_errors(label):
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if frame.empty:
        raise BundleError(f"{label}: the file has a header but no rows.")
    return frame


def count_csv_rows(path: Path, label: str) -> int:
    """Parse a whole CSV, a chunk at a time, and return its number of data rows (at least one)."""
    with (
        csv_errors(label),
        pd.read_csv(path, dtype=str, keep_default_na=False, chunksize=CSV_CHUNK_ROWS) as chunks,
    ):
        rows = sum(len(chunk) for chunk in chunks)
    if not rows:
        raise BundleError(f"{label}: the file has a header but no rows.")
    return rows


@contextmanager
def csv_errors(label: str) -> Iterator[None]:
    """Turn pandas' parse errors into one BundleError sentence naming the file."""
    try:
        yield
    except pd.errors.EmptyDataError:
        raise BundleError(f"{label}: the file is empty.") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as error:
        raise BundleError(f"{label}: not a readable CSV ({one_line(error)}).") from None


def is_missing(cells: pd.Series) -> pd.Series:
    """(N,) bools: which cells the grader reads as empty (blank, or "nan", "NaN", "<NA>" once stripped)."""
    return cells.fillna("").str.strip().isin(MISSING_SPELLINGS)


def check_ids(spec: BundleSpec, frame: pd.DataFrame, label: str) -> None:
    if spec.id_column not in frame.columns:
        raise BundleError(
            f"{label}: has no id column {spec.id_column!r} (columns: {', '.join(frame.columns)})."
        )
    ids = frame[spec.id_column]
    if is_missing(ids).any():
        raise BundleError(f"{label}: the id column {spec.id_column!r} has empty values.")
    duplicated = ids[ids.duplicated()].unique()
    if len(duplicated):
        raise BundleError(f"{label}: ids are not unique ({sample_of(duplicated)} appear more than once).")


def check_answers(
    spec: BundleSpec,
    answers: pd.DataFrame,
    reference: tuple[pd.DataFrame, str],
    test: pd.DataFrame | None,
) -> None:
    missing_columns = [c for c in spec.target_columns if c not in answers.columns]
    if missing_columns:
        raise BundleError(f"private/answers.csv: missing target columns {', '.join(missing_columns)}.")
    frame, label = reference
    check_same_ids(answers[spec.id_column], frame[spec.id_column], "private/answers.csv", label)
    empty = answers[list(spec.target_columns)].apply(is_missing).any(axis=1)
    if empty.any():
        ids = sample_of(answers.loc[empty, spec.id_column])
        raise BundleError(f"private/answers.csv: {int(empty.sum())} rows have missing targets (ids {ids}).")
    leaked = [c for c in spec.target_columns if test is not None and c in test.columns]
    if leaked:
        raise BundleError(f"public/test.csv: contains the target columns {', '.join(leaked)}.")


def check_sample_submission(
    spec: BundleSpec, sample: pd.DataFrame, reference: tuple[pd.DataFrame, str]
) -> None:
    expected = [spec.id_column, *spec.target_columns]
    if list(sample.columns) != expected:
        raise BundleError(
            f"public/sample_submission.csv: columns must be {', '.join(expected)}, "
            f"not {', '.join(sample.columns)}."
        )
    frame, label = reference
    if label != f"public/{SAMPLE}":
        check_same_ids(sample[spec.id_column], frame[spec.id_column], f"public/{SAMPLE}", label)


def check_same_ids(ids: pd.Series, reference: pd.Series, label: str, reference_label: str) -> None:
    extra = sorted(set(ids) - set(reference))
    missing = sorted(set(reference) - set(ids))
    if missing:
        raise BundleError(
            f"{label}: lacks {len(missing)} ids of {reference_label} (e.g. {sample_of(missing)})."
        )
    if extra:
        raise BundleError(
            f"{label}: has {len(extra)} ids not in {reference_label} (e.g. {sample_of(extra)})."
        )


def baseline_score(spec: BundleSpec, root: Path) -> float | None:
    """The sample submission's score: the 'trivial baseline' of the normalized reward. None when the metric
    leaves it undefined (a constant sample under Pearson is NaN, invalid as a submission, as in MLE-bench);
    the reward then has no baseline to normalise by.

    The grader raises ValueError only for answers it cannot use (values of the wrong kind for the metric,
    or answers the metric is undefined for), so that is reported against private/answers.csv.
    """
    sample, answers = root / "public" / "sample_submission.csv", root / "private" / "answers.csv"
    try:
        grade = grade_submission(sample, answers, spec.grading)
    except ValueError as error:
        raise BundleError(f"private/answers.csv: {lowercase_first(one_line(error))}") from None
    if grade.undefined:
        return None
    if not grade.valid or grade.score is None:
        raise BundleError(f"public/sample_submission.csv: cannot be graded ({grade.error}).")
    return grade.score


def read_leaderboard(path: Path) -> tuple[float, ...]:
    try:
        return load_leaderboard_scores(path)
    except ValueError as error:  # its message quotes the full path, which is not the user's to see
        text = str(error).replace(f"leaderboard {path}", "leaderboard file").replace(str(path), "it")
        reason = one_line(ValueError(text))
        raise BundleError(f"leaderboard.csv: {lowercase_first(reason)}") from None


def list_public_files(public: Path, frames: dict[str, pd.DataFrame]) -> tuple[PublicFile, ...]:
    """Every public file with its size; each CSV or JSON not read yet is parsed here, so every one is checked.

    `rows` is a CSV's data rows, a JSONL file's records or a JSON array's items; None for other files.
    """
    files = []
    for path in sorted(p for p in public.rglob("*") if p.is_file()):
        name = path.relative_to(public).as_posix()
        if name in frames:
            rows: int | None = len(frames[name])
        elif path.suffix.lower() == ".csv":
            rows = count_csv_rows(path, f"public/{name}")
        else:
            rows = count_public_records(path, f"public/{name}")
        files.append(PublicFile(name=name, size_bytes=path.stat().st_size, rows=rows))
    return tuple(files)


def count_public_records(path: Path, label: str) -> int | None:
    """Records of a JSON or JSONL file (which must parse); None for text, images and other files."""
    try:
        return count_records(path)
    except FormatError as error:
        raise BundleError(f"{label}: {error}") from None
