"""`manage.py grade SLUG SUBMISSION.csv` → {"valid": bool, "score": float|null, "error": str|null}

An invalid submission is a result (exit 0); a missing competition or file is bad input (exit 2).
"""

from pathlib import Path

from rl_core.grading import grade_submission
from webapp.cli import BadInput, JsonCommand
from webapp.competitions import selectors, storage


class Command(JsonCommand):
    help = "Grade a submission file against a competition's hidden answers."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("submission", type=Path)

    def run(self, *, slug: str, submission: Path, **_):
        competition = selectors.competition_get(slug=slug)
        if competition is None:
            raise BadInput(f"SLUG: no competition called {slug!r}.")
        if not submission.is_file():
            raise BadInput(f"SUBMISSION: no such file {submission}.")
        spec = selectors.competition_grading_spec(competition=competition)
        grade = grade_submission(submission, storage.answers_path(slug), spec)
        return {"valid": grade.valid, "score": grade.score, "error": grade.error}
