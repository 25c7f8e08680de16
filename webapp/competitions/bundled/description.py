"""Render a bundled competition's description.md, laid out like a Kaggle competition page.

Sections: the overview (the task), the data (files, then a table describing every column), the
evaluation (the metric, its direction and its perfect score), the submission format (with the first
rows of the sample submission as an example) and the source of the data.
"""

from __future__ import annotations

import pandas as pd

from rl_core.metrics import Metric, get_metric
from webapp.competitions.bundled.spec import CompetitionSpec

KIND_SENTENCES = {
    "label": "Each target column holds a predicted label, written like the labels in `train.csv`.",
    "probability": "Each target column holds a predicted probability, a number between 0 and 1.",
    "value": "Each target column holds a predicted real number.",
}

TEXT_SENTENCE = "Each target column holds the predicted text."


def render_description(spec: CompetitionSpec, *, n_train: int, n_test: int, sample: pd.DataFrame) -> str:
    """The Markdown page; `sample` is the sample submission, whose first rows become the example."""
    metric = get_metric(spec.metric)
    sections = [
        f"# {spec.name}",
        f"## Overview\n\n{spec.overview.strip()}",
        data_section(spec, n_train=n_train, n_test=n_test),
        evaluation_section(spec, metric),
        submission_section(spec, metric, sample),
        f"## Source\n\n{spec.source.strip()}",
    ]
    return "\n\n".join(sections) + "\n"


def data_section(spec: CompetitionSpec, *, n_train: int, n_test: int) -> str:
    """Files and the data-fields table (the id column first, then every column in train.csv order)."""
    targets = ", ".join(f"`{column}`" for column in spec.target_columns)
    rows = [f"| `{spec.id_column}` | Row identifier: a unique integer, assigned at random. |"]
    rows += [f"| `{column}` | {escape_cell(text)} |" for column, text in spec.fields.items()]
    return "\n".join(
        [
            "## Data",
            "",
            *(
                [spec.data_files.strip().format(n_train=n_train, n_test=n_test)]
                if spec.data_files
                else [
                    f"- `train.csv`: {n_train} rows: the id, the features and the target{plural(spec)} "
                    f"{targets}.",
                    f"- `test.csv`: {n_test} rows with the id and the features; predict the "
                    f"target{plural(spec)}.",
                ]
            ),
            "- `sample_submission.csv`: a valid submission in the right format (a constant prediction).",
            "",
            "In every file a missing value is an empty cell.",
            "",
            "### Data fields",
            "",
            "| column | description |",
            "|---|---|",
            *rows,
        ]
    )


def evaluation_section(spec: CompetitionSpec, metric: Metric) -> str:
    """The metric in words, its direction and its perfect value."""
    direction = "Higher is better" if metric.higher_is_better else "Lower is better"
    lines = [
        "## Evaluation",
        "",
        f"Submissions are scored with **{metric.name}**: {metric.description} "
        f"{direction}; a perfect submission scores {metric.perfect:g}.",
    ]
    if spec.evaluation_note:
        lines += ["", spec.evaluation_note.strip()]
    return "\n".join(lines)


def submission_section(spec: CompetitionSpec, metric: Metric, sample: pd.DataFrame) -> str:
    """The expected columns, what they hold, and the first rows of the sample submission."""
    columns = ", ".join(f"`{column}`" for column in (spec.id_column, *spec.target_columns))
    example = sample.head(3).to_csv(index=False, lineterminator="\n")
    return "\n".join(
        [
            "## Submission format",
            "",
            f"Write `submission/submission.csv` with a header and one row per id in `test.csv`, "
            f"with the columns {columns}; row order does not matter. "
            f"{KIND_SENTENCES.get(metric.prediction, TEXT_SENTENCE)} "
            "For example (the sample submission's first rows):",
            "",
            "```csv",
            example.rstrip("\n"),
            "```",
        ]
    )


def plural(spec: CompetitionSpec) -> str:
    """The plural ending "s" when the competition has several target columns."""
    return "s" if len(spec.target_columns) > 1 else ""


def escape_cell(text: str) -> str:
    """`text` made safe inside a Markdown table cell (one line, pipes escaped)."""
    return " ".join(text.split()).replace("|", "\\|")
