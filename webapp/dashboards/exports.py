"""Exports: a run's attempts and learner metrics as CSV or JSON, and one attempt as a zip bundle
(program, instrumented program, response, outputs, grade, configuration, policy version, and the
submission file when the attempt's scratch directory still has it)."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from typing import Any

from django.conf import settings

from webapp.runs import selectors
from webapp.runs.models import Attempt, Run
from webapp.runs.payloads import attempt_detail, attempt_summary, run_summary

ATTEMPT_COLUMNS = (
    "number", "key", "competition", "status", "prompt_kind", "family", "policy_version", "staleness",
    "stage_count", "stages", "valid", "score", "reward", "duration_s", "isolation",
    "started_at", "finished_at",
)  # fmt: skip
METRIC_FIXED_COLUMNS = ("version", "attempts_done", "wall_s")


def run_attempt_records(run: Run) -> list[dict[str, Any]]:
    return [attempt_summary(a) for a in selectors.run_attempt_rows(run=run)]


def attempts_csv(run: Run) -> str:
    """One row per attempt, in dispatch order; `stages` joined with ';'."""
    rows = [{**a, "stages": ";".join(a["stages"])} for a in run_attempt_records(run)]
    return table_csv(rows, ATTEMPT_COLUMNS)


def metrics_csv(run: Run) -> str:
    """One row per learner update; the metric columns are the union of the namespaced keys, sorted."""
    steps = selectors.run_metric_history(run=run)
    keys = sorted({k for step in steps for k in step} - set(METRIC_FIXED_COLUMNS))
    return table_csv(steps, (*METRIC_FIXED_COLUMNS, *keys))


def table_csv(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def attempts_json(run: Run) -> str:
    return json.dumps({"run": run_summary(run), "attempts": run_attempt_records(run)}, indent=1)


def metrics_json(run: Run) -> str:
    return json.dumps({"run": run_summary(run), "metrics": selectors.run_metric_history(run=run)}, indent=1)


RUN_EXPORTS = {
    ("attempts", "csv"): attempts_csv,
    ("attempts", "json"): attempts_json,
    ("metrics", "csv"): metrics_csv,
    ("metrics", "json"): metrics_json,
}


def run_export(run: Run, what: str, fmt: str) -> str | None:
    """The export `what` (attempts|metrics) in `fmt` (csv|json), or None for an unknown pair."""
    build = RUN_EXPORTS.get((what, fmt))
    return build(run) if build else None


def attempt_bundle(attempt: Attempt) -> bytes:
    """The zip of one attempt; every file is named for what it holds."""
    detail = attempt_detail(attempt)
    grade_fields = ("status", "valid", "score", "grade_error", "reward", "stages", "duration_s", "exit_code")
    files: dict[str, str | bytes] = {
        "program.py": attempt.program,
        "instrumented_program.py": attempt.instrumented_program,
        "response.txt": attempt.response,
        "plan.md": attempt.plan,
        "stdout.txt": attempt.stdout_tail,
        "stderr.txt": attempt.stderr_tail,
        "grade.json": json.dumps({k: detail[k] for k in grade_fields}, indent=1),
        "configuration.json": json.dumps(attempt.run.config, indent=1, sort_keys=True),
        "attempt.json": json.dumps(detail, indent=1),
    }
    submission = attempt_submission_path(attempt)
    if submission is not None:
        files["submission.csv"] = submission.read_bytes()
    return zip_bytes(files, folder=f"run-{attempt.run_id}-attempt-{attempt.number}")


def attempt_submission_path(attempt: Attempt) -> Path | None:
    """The submission the program wrote, if its scratch directory (supervisor.run_dir) is still there."""
    path = Path(settings.DATA_DIR) / "runs" / str(attempt.run_id) / "attempts" / attempt.key
    path = path / "submission" / "submission.csv"
    return path if path.is_file() else None


def zip_bytes(files: dict[str, str | bytes], *, folder: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(f"{folder}/{name}", content)
    return buffer.getvalue()
