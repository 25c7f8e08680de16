"""Grading your own submission.csv against a competition's hidden answers (Kaggle's "Submit predictions").

The file is graded by the code that grades every attempt of a run (`rl_core.grading.grade_submission`), and
only its outcome is kept (a `Submission` row: when, the file's name and size, the score or the grader's
sentence saying what is wrong); the file itself is deleted once graded. Nothing of the answers is shown
beyond what the grader's sentences say, which name the submission's own columns, ids and values and the
answers' row count and ids, all public in test.csv.

Limits: a file over PRACTICUM_SUBMISSION_MAX_MB is refused before grading; a user may grade at most
PRACTICUM_SUBMISSIONS_PER_DAY files per competition in any 24 hours. Every graded upload counts, valid or
not (unlike Kaggle, which does not count errors): the limit bounds the grading work each user causes.
A refused upload writes nothing; the count, the grading and the row happen under a lock on the user's row,
so two uploads at once cannot both take the last place.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from rl_core.grading import Grade, grade_submission
from webapp.competitions import storage
from webapp.competitions.models import Competition, Submission
from webapp.competitions.selectors import competition_grading_spec

log = logging.getLogger(__name__)

WINDOW = timedelta(hours=24)
"""The rate limit's window: PRACTICUM_SUBMISSIONS_PER_DAY graded files in any span this long."""

UNGRADABLE = "This competition's answers cannot be graded right now (Practicum's fault, not your file's)."


class SubmissionRefused(ValueError):
    """An upload that is not graded: too large, or over the rate limit. The message says why."""


@dataclass(frozen=True)
class Quota:
    """A user's graded submissions to one competition in the last 24 hours, against the limit."""

    used: int
    limit: int
    next_at: datetime | None  # when a place frees up, once all are used; None while some are left

    @property
    def left(self) -> int:
        return max(self.limit - self.used, 0)


def submissions_of(*, user: User, competition: Competition) -> QuerySet[Submission]:
    """The user's submissions to the competition, newest first."""
    return Submission.objects.filter(user=user, competition=competition)


def submission_quota(*, user: User, competition: Competition, now: datetime | None = None) -> Quota:
    """How many of the user's PRACTICUM_SUBMISSIONS_PER_DAY places are taken, and when the next frees up."""
    now = now or timezone.now()
    limit = settings.PRACTICUM_SUBMISSIONS_PER_DAY
    recent = submissions_of(user=user, competition=competition).filter(created_at__gt=now - WINDOW)
    times = sorted(recent.values_list("created_at", flat=True))
    next_at = times[len(times) - limit] + WINDOW if len(times) >= limit else None
    return Quota(used=len(times), limit=limit, next_at=next_at)


def check_size(upload: UploadedFile) -> None:
    """SubmissionRefused naming the limit when the file is over PRACTICUM_SUBMISSION_MAX_MB."""
    max_mb = settings.PRACTICUM_SUBMISSION_MAX_MB
    if upload.size > max_mb * 1024 * 1024:
        size_mb = upload.size / 1024 / 1024
        raise SubmissionRefused(
            f"The file {upload.name} is {size_mb:.1f} MB; a submission may be at most {max_mb} MB."
        )


def check_quota(quota: Quota) -> None:
    """SubmissionRefused naming the limit and when the next submission is allowed, once all are used."""
    if quota.next_at is None:
        return
    when = timezone.localtime(quota.next_at).strftime("%Y-%m-%d %H:%M %Z")
    raise SubmissionRefused(
        f"You have graded {quota.used} submissions to this competition in the last 24 hours, the limit "
        f"({quota.limit}); the next one is allowed at {when}."
    )


def submission_grade(*, user: User, competition: Competition, upload: UploadedFile) -> Submission:
    """Grade an uploaded submission.csv and record the outcome (valid with a score, or invalid with the
    grader's error). SubmissionRefused when the file is too large or the user is over the rate limit;
    then nothing is written. An answers file the grader cannot use is logged and refused, not counted."""
    check_size(upload)
    with transaction.atomic():
        get_user_model().objects.select_for_update().only("id").get(id=user.id)
        check_quota(submission_quota(user=user, competition=competition))
        grade = graded(competition, upload)
        return Submission.objects.create(
            competition=competition, user=user, file_name=upload.name[:255], size_bytes=upload.size,
            valid=grade.valid, score=grade.score, error=grade.error or "",
        )  # fmt: skip


def graded(competition: Competition, upload: UploadedFile) -> Grade:
    """The grader's verdict on the upload, saved for it as submission.csv in a folder deleted afterwards
    (so its sentences name "submission.csv", never a path of ours)."""
    with tempfile.TemporaryDirectory(dir=settings.FILE_UPLOAD_TEMP_DIR) as folder:
        path = Path(folder) / "submission.csv"
        with path.open("wb") as stream:
            for chunk in upload.chunks():
                stream.write(chunk)
        spec = competition_grading_spec(competition=competition)
        try:
            return grade_submission(path, storage.answers_path(competition.slug), spec)
        except ValueError:  # the answers or spec are unusable: ours to fix; its message may quote them
            log.exception("Grading a submission to %s failed on the answers' side.", competition.slug)
            raise SubmissionRefused(UNGRADABLE) from None
