"""Prompts for LMPolicy: the chat messages of a solve or an improve prompt, built from a competition.

Both kinds carry the same task section: the competition's description, the public files under ``./input/``
(named, folders of many files counted; then `TaskInfo.data_preview`: every file with its size, the head of
the CSV tables, the first JSON records, the images per folder), what to predict for which id column, the
metric and its direction, the time limit, and the one output path ``./submission/submission.csv``. A solve
prompt asks for a program from scratch; an improve prompt (the paper's second prompt kind) adds an earlier
valid program, the tail of its output and its score, and asks for a better complete program. Both end
with the response format: a short plan in prose, then ONE fenced ```python block holding the whole
program (what `rl_core.responses.parse_response` accepts).

Long fields are cut to `PromptLimits` characters (keeping the head of a description and a preview, the
tail of an output), so a prompt stays within a small model's context; the policy still caps the tokens.

Two styles (`PromptStyle`). ``"full"`` is the above, the paper's kind of prompt (about 1,600 tokens for a
bundled competition). ``"compact"`` is for small models on a CPU (about 300 tokens): the task as facts from
`TaskInfo.features` (task type, row counts, the columns by kind, missing values, what to submit, the
metric) instead of the description and data preview, and an improve prompt that shows the earlier program
first (without comments) and asks for the whole program back with one change. bench/lm_valid_rate.py
measures the two against each other (valid rate, seconds per attempt); its numbers chose the default.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Literal

from rl_core.policy import PreviousSolution, Prompt, TaskInfo

PromptStyle = Literal["full", "compact"]

INPUT_DIR = "./input/"
SUBMISSION_PATH = "./submission/submission.csv"
SYSTEM_PROMPT = (
    "You are an expert machine-learning engineer taking part in a Kaggle-style competition. You write "
    "complete, correct Python programs that train a model on the public data and write a submission file."
)
RESPONSE_FORMAT = (
    "Answer with a short plan (two to four sentences), then ONE ```python code block that holds the whole "
    f"program. The program reads its data from {INPUT_DIR} and writes {SUBMISSION_PATH} (create the "
    "./submission/ folder if it is missing). It runs without internet access, so it must not download "
    "anything. Write no other code blocks."
)
TRUNCATED = "[... truncated]"


@dataclass(frozen=True)
class PromptLimits:
    """Character budgets for the long fields of a prompt (longer text is cut and marked `TRUNCATED`)."""

    description_chars: int = 4000
    """The competition description (its head is kept)."""
    preview_chars: int = 2500
    """The data preview (its head is kept)."""
    code_chars: int = 6000
    """The earlier program of an improve prompt (its head is kept)."""
    output_chars: int = 1500
    """The earlier program's output (its tail is kept: that is where the scores and errors are)."""


def build_messages(
    prompt: Prompt, limits: PromptLimits | None = None, *, style: PromptStyle = "full"
) -> list[dict[str, str]]:
    """The chat messages (system, then user) for `prompt`, ready for ``tokenizer.apply_chat_template``.

    Raises:
        ValueError: an improve prompt without `Prompt.previous`, or an unknown style.
    """
    if style == "compact":
        user = compact_message(prompt, limits or PromptLimits())
    elif style == "full":
        user = user_message(prompt, limits)
    else:
        raise ValueError(f"A prompt style is 'full' or 'compact', not {style!r}.")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def user_message(prompt: Prompt, limits: PromptLimits | None = None) -> str:
    """The user turn of `prompt`: `solve_message` or `improve_message`."""
    limits = limits or PromptLimits()
    if prompt.kind == "solve":
        return solve_message(prompt.task, limits)
    if prompt.previous is None:
        raise ValueError("An improve prompt needs Prompt.previous, the earlier valid solution to improve.")
    return improve_message(prompt.task, prompt.previous, limits)


def solve_message(task: TaskInfo, limits: PromptLimits) -> str:
    """Ask for a program that solves `task` from scratch."""
    intro = "Write a Python program that solves the machine-learning competition below."
    return "\n\n".join((intro, task_section(task, limits), RESPONSE_FORMAT))


def improve_message(task: TaskInfo, previous: PreviousSolution, limits: PromptLimits) -> str:
    """Ask for a better program than `previous`, shown with its output and score."""
    intro = (
        "Below is a machine-learning competition and an earlier program that solves it. Write an improved "
        "complete program that scores better on the metric (for example a better model, better features or "
        "better hyper-parameters), keeping what already works."
    )
    sections = (intro, task_section(task, limits), previous_section(task, previous, limits), RESPONSE_FORMAT)
    return "\n\n".join(sections)


def task_section(task: TaskInfo, limits: PromptLimits) -> str:
    """The competition: description, data, goal, metric and direction, time limit."""
    parts = [
        f"# Competition: {task.slug}",
        "## Description\n" + clip_head(task.description.strip(), limits.description_chars),
        "## Data\n" + data_section(task, limits),
        "## Goal\n" + goal_section(task),
    ]
    return "\n\n".join(parts)


FILES_NAMED = 12
"""At most this many public files are named one by one; past that, top-level files are named and each
folder is counted."""


def file_names(files: tuple[str, ...]) -> str:
    """The public files for a sentence: each by name when there are few, else folders counted.

    >>> file_names(("train.csv", "images/1.png"))
    './input/train.csv, ./input/images/1.png'
    >>> file_names(("train.csv", *(f"images/{i}.png" for i in range(20))))
    './input/train.csv, ./input/images/ (20 files)'
    """
    if len(files) <= FILES_NAMED:
        return ", ".join(f"{INPUT_DIR}{name}" for name in files)
    folders: dict[str, int] = {}
    for name in files:
        if "/" in name:
            folder = name.split("/", 1)[0]
            folders[folder] = folders.get(folder, 0) + 1
    top = [f"{INPUT_DIR}{name}" for name in files if "/" not in name]
    return ", ".join([*top, *(f"{INPUT_DIR}{folder}/ ({n} files)" for folder, n in folders.items())])


def data_section(task: TaskInfo, limits: PromptLimits) -> str:
    """The public files under ./input/, then what they hold (`TaskInfo.data_preview`)."""
    files = file_names(task.files) or f"the files in {INPUT_DIR}"
    text = f"The public data files are {files} (read-only)."
    if task.data_preview.strip():
        text += "\nWhat they hold:\n" + clip_head(task.data_preview.strip(), limits.preview_chars)
    return text


def goal_section(task: TaskInfo) -> str:
    """What to predict, where to write it, how it is scored, and how long the program may run."""
    targets = ", ".join(f"`{column}`" for column in task.target_columns)
    has_sample = "sample_submission.csv" in task.files
    like = f", in the format of {INPUT_DIR}sample_submission.csv" if has_sample else ""
    test_file = task.features.get("test_file", "test.csv")
    return (
        f"Predict {targets} for every row of {INPUT_DIR}{test_file} and write {SUBMISSION_PATH} with the "
        f"columns `{task.id_column}`, {targets}{like}.\n"
        f"The submission is scored with {task.metric} ({direction(task)}).\n"
        f"The program must finish within {seconds(task.time_limit_s)} seconds on a CPU."
    )


def previous_section(task: TaskInfo, previous: PreviousSolution, limits: PromptLimits) -> str:
    """The earlier program, the tail of its output, and its score."""
    code = clip_head(previous.code.rstrip(), limits.code_chars)
    output = clip_tail(previous.output.rstrip(), limits.output_chars) or "(no output)"
    return (
        f"## Earlier solution (scored {previous.score:.6g} on {task.metric}; {direction(task)})\n"
        f"```python\n{code}\n```\n\nIts output (last lines):\n```text\n{output}\n```"
    )


def direction(task: TaskInfo) -> str:
    """``"higher is better"`` or ``"lower is better"``."""
    return "higher is better" if task.higher_is_better else "lower is better"


def seconds(value: float) -> str:
    """A time limit as a short number of seconds.

    >>> seconds(600.0), seconds(2.5)
    ('600', '2.5')
    """
    return f"{value:g}"


def clip_head(text: str, limit: int) -> str:
    """The first `limit` characters of `text`, marked when cut.

    >>> clip_head("abcdef", 3)
    'abc\\n[... truncated]'
    """
    return text if len(text) <= limit else text[:limit] + "\n" + TRUNCATED


def clip_tail(text: str, limit: int) -> str:
    """The last `limit` characters of `text`, marked when cut.

    >>> clip_tail("abcdef", 3)
    '[... truncated]\\ndef'
    """
    return text if len(text) <= limit else TRUNCATED + "\n" + text[len(text) - limit :]


# ------------------------------------------------------------------------------------------ compact style

COMPACT_FORMAT = (
    "Reply with one sentence of plan, then ONE ```python block holding the whole program. It reads "
    f"{INPUT_DIR}train.csv and {INPUT_DIR}test.csv, writes {SUBMISSION_PATH} (create ./submission/), "
    "downloads nothing and uses only pandas, numpy, scikit-learn, lightgbm or xgboost."
)


def compact_message(prompt: Prompt, limits: PromptLimits) -> str:
    """The compact user turn: the task as facts; for improve, the earlier program first."""
    task = compact_task(prompt.task)
    if prompt.kind == "solve":
        return f"Write a Python program for this machine-learning task.\n\n{task}\n\n{COMPACT_FORMAT}"
    if prompt.previous is None:
        raise ValueError("An improve prompt needs Prompt.previous, the earlier valid solution to improve.")
    previous = prompt.previous
    code = clip_head(strip_comments(previous.code).rstrip(), limits.code_chars)
    output = clip_tail(previous.output.rstrip(), min(limits.output_chars, 300)) or "(no output)"
    return (
        f"This program scores {previous.score:.6g} ({prompt.task.metric}, {direction(prompt.task)}):\n"
        f"```python\n{code}\n```\nIts output ended with:\n```text\n{output}\n```\n\n{task}\n\n"
        "Return the whole program with ONE change that should improve the score: one sentence naming the "
        "change, then the whole program in ONE ```python block."
    )


def compact_task(task: TaskInfo) -> str:
    """The task in a few lines, from `TaskInfo.features` (the description and preview are left out)."""
    f, targets = task.features, ", ".join(task.target_columns)
    train, test = f.get("train_file", "train.csv"), f.get("test_file", "test.csv")
    lines = [
        f"Task `{task.slug}`: {f.get('task_type', 'prediction')}. Learn from {f.get('n_rows', '?')} rows of "
        f"{INPUT_DIR}{train}; predict `{targets}` for the {f.get('n_test_rows', '?')} rows of "
        f"{INPUT_DIR}{test}.",
        kind_line(f),
        "Columns: " + column_summary(task.id_column, f) + ".",
        target_line(task, f),
        f"Write {SUBMISSION_PATH} with the columns {task.id_column}, {submission_columns(task, f)}.",
        f"Metric: {task.metric} ({direction(task)}). Time limit: {seconds(task.time_limit_s)} s on a CPU.",
    ]
    return "\n".join(line for line in lines if line)


def kind_line(features: dict[str, Any]) -> str:
    """What a program must do first for data that are not two CSV tables ("" for tables)."""
    kind = features.get("data_kind")
    if kind == "images":
        size = "x".join(str(n) for n in features.get("image_size", []))
        return (
            f"The {features.get('n_images', '?')} images ({size} pixels) are files under {INPUT_DIR}, "
            "named by "
            f"the column `{features.get('image_column')}` plus a suffix such as .png; read them with PIL."
        )
    if kind == "json":
        return "The data are JSON records: flatten nested objects into columns (pandas.json_normalize)."
    if kind == "text_span":
        text = (features.get("text_columns") or ["text"])[0]
        return f"Each prediction is a span (a piece) of the row's `{text}`, scored by word overlap."
    return ""


def column_summary(id_column: str, features: dict[str, Any]) -> str:
    """The feature columns by kind, e.g. "id `id`; numeric: a, b; categorical: c; 5% of cells missing"."""
    parts = [f"id `{id_column}`"]
    for kind in ("numeric", "categorical", "text"):
        columns = features.get(f"{kind}_columns") or []
        if columns:
            parts.append(f"{kind}: {', '.join(columns)}")
    missing = float(features.get("missing_fraction") or 0.0)
    if missing > 0:
        parts.append(f"{missing:.0%} of feature cells missing")
    return "; ".join(parts)


def target_line(task: TaskInfo, features: dict[str, Any]) -> str:
    """Where the label lives and its classes, for classification tasks ("" otherwise)."""
    label, classes = features.get("label_column"), features.get("class_labels") or []
    if not classes:
        return ""
    shown = ", ".join(str(c) for c in classes[:12]) + (", ..." if len(classes) > 12 else "")
    where = f"train.csv holds the label in `{label}`" if label else "the targets are train.csv columns"
    return f"Classes: {shown} ({where})."


def submission_columns(task: TaskInfo, features: dict[str, Any]) -> str:
    """What the submission holds besides the id: one probability per class, or the targets."""
    pairs = features.get("class_columns") or []
    if pairs:
        return ", ".join(f"{column} (probability of {label})" for column, label in pairs)
    return ", ".join(task.target_columns)


def strip_comments(code: str) -> str:
    """`code` without comments and blank lines (`ast.unparse`), or unchanged when it does not parse.

    >>> strip_comments("x = 1  # one\\n\\n# done\\nprint(x)\\n")
    'x = 1\\nprint(x)\\n'
    """
    try:
        return ast.unparse(ast.parse(code)) + "\n"
    except (SyntaxError, ValueError, RecursionError):
        return code
