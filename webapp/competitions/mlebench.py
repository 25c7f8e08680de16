"""Turn an MLE-bench competition folder into a Practicum bundle, then validate it like any other.

An MLE-bench folder holds `config.yaml` (id, name, `grader.name`, `dataset.answers`), `description.md`,
`prepared/public/` and `prepared/private/`, and optionally `leaderboard.csv`. The id column is the
sample submission's first column and the targets are the rest, as MLE-bench's graders assume.
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

import pandas as pd
import yaml

from webapp.competitions.bundles import DEFAULT_MEMORY_MB, DEFAULT_TIME_LIMIT_S, BundleError, one_line

# MLE-bench grader names → Practicum metrics (rl_core.metrics).
GRADER_METRICS = {
    "accuracy": "accuracy",
    "auc": "roc_auc",
    "roc-auc": "roc_auc",
    "roc_auc": "roc_auc",
    "auc-roc": "roc_auc",
    "mean-column-wise-auc": "mean_columnwise_roc_auc",
    "log-loss": "log_loss",
    "logloss": "log_loss",
    "multi-class-log-loss": "log_loss",
    "rmse": "rmse",
    "rmsle": "rmsle",
    "mean-columnwise-rmsle": "mean_columnwise_rmsle",
    "mae": "mae",
    "r2": "r2",
    "qwk": "quadratic_weighted_kappa",
    "quadratic-weighted-kappa": "quadratic_weighted_kappa",
    "f1": "f1",
    "macro-f1": "f1_macro",
    "pearson": "pearson",
    "spearman": "spearman",
}


def is_mlebench_folder(path: Path) -> bool:
    return (path / "config.yaml").is_file() and (path / "prepared").is_dir()


def convert_mlebench(source: Path, dest: Path) -> Path:
    """Write a Practicum bundle for the MLE-bench competition at `source` into the empty folder `dest`."""
    config = read_config(source / "config.yaml")
    metric = map_grader(config)
    public, private = source / "prepared" / "public", source / "prepared" / "private"
    answers = private / PurePosixPath(str(config.get("dataset", {}).get("answers", "test.csv"))).name
    if not answers.is_file():
        raise BundleError(
            f"prepared/private/{answers.name}: the answers file named in config.yaml is missing."
        )
    sample = public / "sample_submission.csv"
    columns = sample_columns(sample)
    shutil.copytree(public, dest / "public", symlinks=True)
    (dest / "private").mkdir()
    shutil.copyfile(answers, dest / "private" / "answers.csv")
    if (source / "description.md").is_file():
        shutil.copyfile(source / "description.md", dest / "description.md")
    if (source / "leaderboard.csv").is_file():
        shutil.copyfile(source / "leaderboard.csv", dest / "leaderboard.csv")
    spec = {
        "name": str(config.get("name") or config["id"]),
        "slug": str(config["id"]),
        "metric": metric,
        "id_column": columns[0],
        "target_columns": columns[1:],
        "time_limit_s": DEFAULT_TIME_LIMIT_S,
        "memory_mb": DEFAULT_MEMORY_MB,
    }
    (dest / "competition.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return dest


def read_config(path: Path) -> dict:
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise BundleError(f"config.yaml: not valid YAML ({one_line(error)}).") from None
    if not isinstance(config, dict) or not config.get("id"):
        raise BundleError("config.yaml: expected an MLE-bench config with an 'id' field.")
    return config


def map_grader(config: dict) -> str:
    grader = config.get("grader") or {}
    name = str(grader.get("name", "")).strip().lower() if isinstance(grader, dict) else ""
    if name not in GRADER_METRICS:
        known = ", ".join(sorted(GRADER_METRICS))
        raise BundleError(
            f"config.yaml: grader {name or '(none)'!r} has no Practicum metric; known: {known}."
        )
    return GRADER_METRICS[name]


def sample_columns(sample: Path) -> list[str]:
    if not sample.is_file():
        raise BundleError("prepared/public/sample_submission.csv: the MLE-bench folder has no such file.")
    try:
        columns = list(pd.read_csv(sample, nrows=0).columns)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        raise BundleError("prepared/public/sample_submission.csv: not a readable CSV.") from None
    if len(columns) < 2:
        raise BundleError(
            "prepared/public/sample_submission.csv: needs an id column and at least one target."
        )
    return columns
