"""Turn an MLE-bench competition folder into a Practicum bundle, then validate it like any other.

An MLE-bench folder holds what MLE-bench keeps in two places: the competition's `config.yaml` (`id`,
`name`, `grader.name`, `dataset.answers`, `dataset.sample_submission`) and `description.md`, and the
prepared data, `prepared/public/` and `prepared/private/`; optionally a Kaggle `leaderboard.csv`.
The config's dataset paths are relative to MLE-bench's data dir (``<id>/prepared/private/test.csv``);
they are read from `prepared/` on. Public files of any kind (CSV, JSON, images, nested folders) are
copied as they are.

Ids and targets are found as MLE-bench's graders find them, from the sample submission, the answers and
the public test file (``test.csv``, or the records of ``test.json`` / ``test.jsonl``), not by position
(`key_columns`): the targets are the sample's columns that the answers hold and the test file lacks; the
id is the sample's column that the test file shares, has a value in every row and no value twice
(detecting-insults-in-social-commentary's grader matches rows by ``Comment``, its target ``Insult`` being
the sample's first column, and ``Date`` repeats). Without a test file the id is the sample's first column.
The sample submission (``sampleSubmission.csv``, ``sample_submission_null.csv``, even one kept in
`prepared/private/`) keeps its own name in public/, and ``public/sample_submission.csv`` is written with
the id and target columns only, in that order, its cells copied as text.

The grader's name picks the metric (`GRADER_METRICS`); where a competition's grader checks a submission
more strictly or differently from others of that name, `COMPETITION_METRICS` names the metric variant that
checks the same. Not done: graders with no Practicum metric (``column-wise-spearman``, ``micro-f1-score``,
...) are refused naming the grader; MLE-bench's graders that align rows by position rather than by id
(nomad2018's) are graded here by id.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path, PurePosixPath

import pandas as pd
import yaml

from webapp.competitions.importing.bundles import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIME_LIMIT_S,
    BundleError,
    one_line,
)

# MLE-bench grader names (normalized by `grader_key`) → Practicum metrics (rl_core.metrics). The names
# are those MLE-bench's configs use, which are free text ("column-wise ROC AUC", "root_mean_squared_error").
GRADER_METRICS = {
    "accuracy": "accuracy",
    "multi-class-classification-accuracy": "accuracy",
    "balanced-accuracy": "balanced_accuracy",
    "auc": "roc_auc",
    "roc-auc": "roc_auc",
    "auc-roc": "roc_auc",
    "mean-column-wise-auc": "mean_columnwise_roc_auc",
    "mean-column-wise-roc-auc": "mean_columnwise_roc_auc",
    "mean-columnwise-roc-auc": "mean_columnwise_roc_auc",
    "column-wise-roc-auc": "mean_columnwise_roc_auc",
    "log-loss": "log_loss",
    "logloss": "log_loss",
    "multi-class-log-loss": "log_loss",
    "rmse": "rmse",
    "root-mean-squared-error": "rmse",
    "rmsle": "rmsle",
    "root-mean-squared-log-error": "rmsle",
    "mean-column-wise-rmsle": "mean_columnwise_rmsle",
    "mean-columnwise-rmsle": "mean_columnwise_rmsle",
    "mae": "mae",
    "mean-absolute-error": "mae",
    "r2": "r2",
    "qwk": "quadratic_weighted_kappa",
    "quadratic-weighted-kappa": "quadratic_weighted_kappa",
    "f1": "f1",
    "f1-score": "f1",
    "macro-f1": "f1_macro",
    "macro-f1-score": "f1_macro",
    "pearson": "pearson",
    "pearson-correlation-coefficient": "pearson",
    "spearman": "spearman",
    "jaccard": "jaccard",
    "jaccard-similarity": "jaccard",
}

# Competitions whose grader.py checks submissions unlike the others of its grader name.
COMPETITION_METRICS = {
    # grade.py refuses unless set(submission.columns) == {image_id, healthy, multiple_diseases, rust, scab}
    "plant-pathology-2020-fgvc7": "mean_columnwise_roc_auc_exact",
    # grade.py ignores other columns and checks sum(axis=1).round(6).eq(1), not numpy.isclose(atol=1e-6)
    "lmsys-chatbot-arena": "log_loss_6dp",
}

# A one-column metric whose MLE-bench grader averages it over the columns when there are several
# (ranzcr-clip's "auc-roc" grades 11 catheter columns).
COLUMNWISE = {"roc_auc": "mean_columnwise_roc_auc"}

SAMPLE = "sample_submission.csv"
TEST_FILES = ("test.csv", "test.json", "test.jsonl")
FIRST_RECORD_MAX_CHARS = 64 << 20  # how much of a test.json is read to find its first record's keys


def is_mlebench_folder(path: Path) -> bool:
    return (path / "config.yaml").is_file() and (path / "prepared").is_dir()


def convert_mlebench(source: Path, dest: Path) -> Path:
    """Write a Practicum bundle for the MLE-bench competition at `source` into the empty folder `dest`."""
    config = read_config(source / "config.yaml")
    answers = dataset_file(source, config, "answers", "prepared/private/test.csv")
    sample = dataset_file(source, config, "sample_submission", f"prepared/public/{SAMPLE}")
    frame = read_sample(sample, source)
    id_column, targets = key_columns(
        list(frame.columns),
        answer_columns(answers, source),
        public_test_columns(source / "prepared" / "public"),
        frame,
    )
    slug = str(config["id"]).strip().lower()
    spec = {
        "name": str(config.get("name") or config["id"]).strip(),
        "slug": slug,
        "metric": map_grader(config, n_targets=len(targets)),
        "id_column": id_column,
        "target_columns": targets,
        "time_limit_s": DEFAULT_TIME_LIMIT_S,
        "memory_mb": DEFAULT_MEMORY_MB,
    }
    copy_files(source, dest, answers=answers)
    frame[[id_column, *targets]].to_csv(dest / "public" / SAMPLE, index=False)
    (dest / "competition.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return dest


def copy_files(source: Path, dest: Path, *, answers: Path) -> None:
    """Lay the files out as a bundle: public/ as it is, private/answers.csv, description, leaderboard."""
    shutil.copytree(source / "prepared" / "public", dest / "public", symlinks=True)
    (dest / "private").mkdir()
    shutil.copyfile(answers, dest / "private" / "answers.csv")
    for name in ("description.md", "leaderboard.csv"):
        if (source / name).is_file():
            shutil.copyfile(source / name, dest / name)


def read_config(path: Path) -> dict:
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise BundleError(f"config.yaml: not valid YAML ({one_line(error)}).") from None
    if not isinstance(config, dict) or not str(config.get("id") or "").strip():
        raise BundleError("config.yaml: expected an MLE-bench config with an 'id' field.")
    if not isinstance(config.get("dataset") or {}, dict):
        raise BundleError("config.yaml: field 'dataset' must be a mapping (answers, sample_submission).")
    return config


def dataset_file(source: Path, config: dict, key: str, default: str) -> Path:
    """The file `dataset.<key>` names, read from its `prepared/` part on; it must be a file in there."""
    named = str((config.get("dataset") or {}).get(key) or default)
    parts = PurePosixPath(named.replace("\\", "/")).parts
    inside = parts[parts.index("prepared") :] if "prepared" in parts else ()
    if len(inside) < 3 or inside[1] not in ("public", "private") or ".." in inside:
        raise BundleError(
            f"config.yaml: dataset.{key} {named!r} must name a file in prepared/public or prepared/private."
        )
    relative = PurePosixPath(*inside)
    path = source / relative
    if not path.is_file():
        raise BundleError(f"{relative}: the file dataset.{key} names in config.yaml is missing.")
    if not path.resolve().is_relative_to((source / "prepared").resolve()):
        raise BundleError(f"{relative}: links that lead out of prepared/ are not allowed.")
    return path


def grader_key(name: str) -> str:
    """A grader name as GRADER_METRICS spells it.

    >>> grader_key("column-wise ROC AUC"), grader_key(" Root_Mean_Squared_Error ")
    ('column-wise-roc-auc', 'root-mean-squared-error')
    """
    return re.sub(r"[\s_]+", "-", name.strip().lower())


def map_grader(config: dict, *, n_targets: int) -> str:
    """The Practicum metric for the config's grader, column-wise where it grades several target columns."""
    grader = config.get("grader") or {}
    name = str(grader.get("name", "")).strip() if isinstance(grader, dict) else ""
    metric = GRADER_METRICS.get(grader_key(name))
    if metric is None:
        known = ", ".join(sorted(GRADER_METRICS))
        raise BundleError(
            f"config.yaml: grader {name or '(none)'!r} has no Practicum metric; known: {known}."
        )
    metric = COMPETITION_METRICS.get(str(config.get("id", "")).strip(), metric)
    return COLUMNWISE.get(metric, metric) if n_targets > 1 else metric


def read_sample(sample: Path, source: Path) -> pd.DataFrame:
    """The sample submission, every cell as text (written back unchanged); it needs two columns."""
    label = sample.relative_to(source).as_posix()
    try:
        frame = pd.read_csv(sample, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError):
        raise BundleError(f"{label}: not a readable CSV.") from None
    if len(frame.columns) < 2:
        raise BundleError(f"{label}: needs an id column and at least one target.")
    return frame


def answer_columns(answers: Path, source: Path) -> list[str]:
    try:
        return [str(c) for c in pd.read_csv(answers, nrows=0).columns]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError):
        raise BundleError(f"{answers.relative_to(source).as_posix()}: not a readable CSV.") from None


def public_test_columns(public: Path) -> list[str] | None:
    """The columns of the public test file (test.csv, or test.json / test.jsonl records); None if none."""
    for name in TEST_FILES:
        path = public / name
        if not path.is_file():
            continue
        try:
            if name.endswith(".csv"):
                return [str(c) for c in pd.read_csv(path, nrows=0).columns]
            record = first_json_record(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError):
            raise BundleError(f"prepared/public/{name}: not readable as its suffix says.") from None
        return [str(key) for key in record] if isinstance(record, dict) else None
    return None


def first_json_record(path: Path) -> object:
    """The first item of a JSON array file, or the first line of a JSON Lines file (ValueError if none)."""
    with open(path, encoding="utf-8-sig") as text:
        if path.suffix == ".jsonl":
            return json.loads(next(line for line in text if line.strip()))
        head = text.read(FIRST_RECORD_MAX_CHARS).lstrip()
    if not head.startswith("["):
        return json.loads(head)
    item, _ = json.JSONDecoder().raw_decode(head[1:].lstrip())
    return item


def key_columns(
    sample: list[str], answers: list[str], test: list[str] | None, frame: pd.DataFrame
) -> tuple[str, list[str]]:
    """(id column, target columns) as the module docstring says MLE-bench's graders find them."""
    if test is None:
        id_column = sample[0]
    else:
        shared = [c for c in sample if c in test and c in answers]
        keys = [c for c in shared if frame[c].str.strip().ne("").all() and frame[c].is_unique]
        if not keys:
            raise BundleError(
                f"{SAMPLE}: none of its columns ({', '.join(sample)}) identifies the rows of the public "
                "test file (a column both hold, with a distinct value in every row)."
            )
        id_column = keys[0]
    targets = [c for c in sample if c != id_column and c in answers and (test is None or c not in test)]
    if not targets:
        raise BundleError(
            f"{SAMPLE}: none of its columns ({', '.join(sample)}) is a target the answers hold and the "
            "public test file lacks."
        )
    return id_column, targets
