"""Exports: a run's attempts and learner metrics as CSV or JSON, one attempt as a zip bundle
(program, instrumented program, response, outputs, grade, configuration, policy version, and the
submission file when the attempt's scratch directory still has it), and a run's final submissions in
MLE-bench's layout, for MLE-bench's own grader (`mlebench_bundle`)."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from typing import Any

from django.conf import settings

from webapp.competitions.models import Competition
from webapp.runs import selectors, standings
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


class NothingToExport(Exception):
    """Why a run has no final submission to export, in one sentence for the reader."""


def mlebench_bundle(run: Run) -> bytes:
    """The zip of the run's final submissions in MLE-bench's layout, for `mlebench grade`:
    `submissions.jsonl` ({"competition_id", "submission_path"} per line), `<competition id>/submission.csv`
    per competition with a result (a validation run's final grading, a hidden run's best attempt), and a
    README.txt on how to grade it and whether the result counts. A competition's slug is its MLE-bench id
    (webapp.competitions.importing.mlebench). NothingToExport when there is no result, or retention
    removed every result's submission file."""
    results = [(c, a) for c, a in standings.run_results(run=run) if a is not None and a.valid]
    if not results:
        raise NothingToExport(f"Run #{run.id} has no result to export: {no_result_reason(run)}")
    files = {c.slug: path for c, a in results if (path := attempt_submission_path(a)) is not None}
    if not files:
        raise NothingToExport(
            f"Run #{run.id}'s final submission files were removed by scratch retention "
            "(PRACTICUM_SCRATCH_KEEP_DAYS): its attempts keep their programs, not the files they wrote."
        )
    lines = [{"competition_id": slug, "submission_path": f"{slug}/submission.csv"} for slug in files]
    contents: dict[str, str | bytes] = {
        "submissions.jsonl": "".join(json.dumps(line) + "\n" for line in lines),
        "README.txt": mlebench_readme(run, results, exported=set(files)),
    }
    contents |= {f"{slug}/submission.csv": path.read_bytes() for slug, path in files.items()}
    return zip_bytes(contents, folder=f"run-{run.id}-mlebench")


def no_result_reason(run: Run) -> str:
    if run.is_active:
        return "it is still running, and its result is graded when it ends."
    if run.config.get("reward_source") == "validation":
        return "no program was valid on the validation split, so nothing was graded on the hidden answers."
    return "none of its attempts wrote a valid submission."


SOURCE_WORDS = {
    "validation": "validation · clean. Every attempt was scored on a validation split of the training data;"
    " the hidden answers graded the chosen program once, at the end. The result counts.",
    "hidden": "hidden answers · test feedback. Every attempt was scored on the hidden answers during the"
    " search, so this submission was chosen with test-set feedback: MLE-bench's maintainers do not count"
    " such results on the main leaderboard.",
}


def mlebench_readme(run: Run, results: list[tuple[Competition, Attempt]], *, exported: set[str]) -> str:
    """What the bundle is, how MLE-bench grades it, and whether its result counts (its reward source)."""
    source = run.config.get("reward_source", "hidden")
    lines = [
        f"Run #{run.id} {run.name}".rstrip() + ": its final submissions, in MLE-bench's submission layout.",
        "", f"Reward source: {SOURCE_WORDS.get(source, SOURCE_WORDS['hidden'])}", "",
        "Grade with MLE-bench's own grader (github.com/openai/mle-bench; `mlebench prepare -c <id>` first),",
        "from the folder this README is in:", "",
        "    mlebench grade --submission submissions.jsonl --output-dir grades", "",
        "or one competition at a time: mlebench grade-sample <id>/submission.csv <id>", "", "Competitions:",
    ]  # fmt: skip
    for competition, attempt in results:
        grade = f"{competition.metric} {attempt.score}"
        lines.append(f"  {competition.slug}: attempt #{attempt.number}, graded {grade} by Practicum")
        if competition.slug not in exported:
            lines.append("    (left out: retention removed its submission file)")
        elif competition.source != "mlebench":
            lines.append("    (not imported from MLE-bench: MLE-bench's registry may not know this id)")
    return "\n".join(lines) + "\n"
