"""Turn an MLE-bench competition folder into a Practicum bundle, then validate it like any other.

An MLE-bench folder holds what MLE-bench keeps in two places: the competition's `config.yaml` (`id`,
`name`, `grader.name`, `dataset.answers`, `dataset.sample_submission`) and `description.md`, and the
prepared data, `prepared/public/` and `prepared/private/`; optionally a Kaggle `leaderboard.csv`.
The config's dataset paths are relative to MLE-bench's data dir (``<id>/prepared/private/test.csv``);
they are read from `prepared/` on. The id column is the sample submission's first column and the targets
are the rest, as MLE-bench's graders assume.

The sample submission (``sampleSubmission.csv``, ``sample_submission_null.csv``, even one kept in
`prepared/private/`) is copied to ``public/sample_submission.csv``; public files keep their own names too.
Not done: competitions without a tabular ``train.csv`` and ``test.csv`` (images, audio, JSON) are
refused, and grader names with no Practicum metric (``column-wise-spearman``, ``micro-f1-score``, ...)
are refused naming the grader.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path, PurePosixPath

import pandas as pd
import yaml

from webapp.competitions.bundles import DEFAULT_MEMORY_MB, DEFAULT_TIME_LIMIT_S, BundleError, one_line

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
}

# A one-column metric whose MLE-bench grader averages it over the columns when there are several
# (ranzcr-clip's "auc-roc" grades 11 catheter columns).
COLUMNWISE = {"roc_auc": "mean_columnwise_roc_auc"}

TABULAR_PUBLIC = ("train.csv", "test.csv")


def is_mlebench_folder(path: Path) -> bool:
    return (path / "config.yaml").is_file() and (path / "prepared").is_dir()


def convert_mlebench(source: Path, dest: Path) -> Path:
    """Write a Practicum bundle for the MLE-bench competition at `source` into the empty folder `dest`."""
    config = read_config(source / "config.yaml")
    answers = dataset_file(source, config, "answers", "prepared/private/test.csv")
    sample = dataset_file(source, config, "sample_submission", "prepared/public/sample_submission.csv")
    check_tabular(source / "prepared" / "public")
    columns = sample_columns(sample, source)
    spec = {
        "name": str(config.get("name") or config["id"]).strip(),
        "slug": str(config["id"]).strip().lower(),
        "metric": map_grader(config, n_targets=len(columns) - 1),
        "id_column": columns[0],
        "target_columns": columns[1:],
        "time_limit_s": DEFAULT_TIME_LIMIT_S,
        "memory_mb": DEFAULT_MEMORY_MB,
    }
    copy_files(source, dest, answers=answers, sample=sample)
    (dest / "competition.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return dest


def copy_files(source: Path, dest: Path, *, answers: Path, sample: Path) -> None:
    """Lay the files out as a bundle: public/ (plus the sample's canonical name), private/answers.csv."""
    shutil.copytree(source / "prepared" / "public", dest / "public", symlinks=True)
    if sample != source / "prepared" / "public" / "sample_submission.csv":
        shutil.copyfile(sample, dest / "public" / "sample_submission.csv")
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


def check_tabular(public: Path) -> None:
    for name in TABULAR_PUBLIC:
        if not (public / name).is_file():
            raise BundleError(
                f"prepared/public/{name}: the MLE-bench folder has no such file; Practicum needs tabular "
                f"{' and '.join(TABULAR_PUBLIC)}."
            )


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
    return COLUMNWISE.get(metric, metric) if n_targets > 1 else metric


def sample_columns(sample: Path, source: Path) -> list[str]:
    label = sample.relative_to(source).as_posix()
    try:
        columns = list(pd.read_csv(sample, nrows=0).columns)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        raise BundleError(f"{label}: not a readable CSV.") from None
    if len(columns) < 2:
        raise BundleError(f"{label}: needs an id column and at least one target.")
    return columns
