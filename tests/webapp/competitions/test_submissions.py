"""Grading your own submission.csv (Kaggle's "Submit predictions"): the score or the grader's sentence, a
history, a rate limit and a size limit that write nothing when they refuse, login and visibility."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from webapp.competitions import storage, submissions
from webapp.competitions.models import Submission

pytestmark = pytest.mark.django_db

RIGHT = "id,churned\n10,0\n11,1\n12,0\n13,1\n"  # tiny-churn's answers (tests/webapp/conftest.py)
HALF_RIGHT = "id,churned\n13,0\n12,0\n11,0\n10,0\n"


def upload(client, competition, text: str | bytes, name: str = "submission.csv"):
    content = text.encode() if isinstance(text, str) else text
    url = reverse("competitions:submit", args=[competition.slug])
    return client.post(url, {"file": SimpleUploadedFile(name, content, content_type="text/csv")}, follow=True)


@pytest.fixture
def signed_in(client, owner):
    client.force_login(owner)
    return client


def test_a_correct_submission_scores_perfectly_and_is_listed(signed_in, owner, competition):
    response = upload(signed_in, competition, RIGHT)
    submission = Submission.objects.get()
    assert (submission.user, submission.valid, submission.score, submission.error) == (owner, True, 1.0, "")
    body = response.content.decode()
    assert '<strong id="result-score">accuracy 1.0000 (higher is better)</strong>' in body
    assert f'id="submission-{submission.id}"' in body and "submission.csv" in body


def test_a_half_right_submission_scores_a_half_whatever_its_row_order(signed_in, competition):
    upload(signed_in, competition, HALF_RIGHT)
    assert Submission.objects.get().score == 0.5


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("id,label\n10,0\n11,1\n12,0\n13,1\n", "The submission has no column 'churned'"),
        ("id,churned\n10,0\n11,1\n", "The submission has 2 rows where the answers have 4, and lacks ids"),
        ("id,churned\n10,yes\n11,1\n12,0\n13,1\n", "Column 'churned' of the submission must hold numeric"),
        ("", "The submitted file is empty."),  # Django's own check, before grading
    ],
)
def test_a_wrong_submission_gets_the_graders_sentence_and_no_score(signed_in, competition, text, error):
    body = upload(signed_in, competition, text).content.decode()
    assert error.replace("'", "&#x27;") in body
    assert "answers.csv" not in body and str(storage.answers_path(competition.slug)) not in body


def test_an_invalid_submission_is_recorded_with_its_error(signed_in, competition):
    upload(signed_in, competition, "id,label\n10,0\n")
    submission = Submission.objects.get()
    assert not submission.valid and submission.score is None and "no column 'churned'" in submission.error


def test_the_rate_limit_refuses_the_next_upload_naming_the_limit_and_when_and_writes_nothing(
    signed_in, competition, settings
):
    settings.PRACTICUM_SUBMISSIONS_PER_DAY = 2
    upload(signed_in, competition, RIGHT)
    upload(signed_in, competition, "id,label\n")  # an invalid one counts too
    first = Submission.objects.order_by("created_at").first()
    response = upload(signed_in, competition, RIGHT)
    assert response.status_code == 400 and Submission.objects.count() == 2
    when = timezone.localtime(first.created_at + timedelta(hours=24)).strftime("%Y-%m-%d %H:%M")
    body = response.content.decode()
    assert "the limit (2); the next one is allowed at " + when in body


def test_submissions_older_than_a_day_do_not_count_against_the_limit(signed_in, competition, settings):
    settings.PRACTICUM_SUBMISSIONS_PER_DAY = 1
    upload(signed_in, competition, RIGHT)
    Submission.objects.update(created_at=timezone.now() - timedelta(hours=25))
    assert upload(signed_in, competition, RIGHT).status_code == 200
    assert Submission.objects.count() == 2


def test_the_limit_is_per_competition(signed_in, owner, competition, make_bundle, settings):
    from webapp.competitions import services

    other = services.competition_import(path=make_bundle(spec={"slug": "other-churn"}), owner=owner)
    settings.PRACTICUM_SUBMISSIONS_PER_DAY = 1
    upload(signed_in, competition, RIGHT)
    assert upload(signed_in, other, RIGHT).status_code == 200


def test_a_file_over_the_size_limit_is_refused_before_grading_and_writes_nothing(
    signed_in, competition, settings
):
    settings.PRACTICUM_SUBMISSION_MAX_MB = 1
    big = RIGHT + "#" * (1024 * 1024)
    response = upload(signed_in, competition, big, name="big.csv")
    assert response.status_code == 400 and not Submission.objects.exists()
    assert "The file big.csv is 1.0 MB; a submission may be at most 1 MB." in response.content.decode()


def test_unusable_answers_are_refused_without_quoting_them_or_counting(signed_in, competition):
    storage.answers_path(competition.slug).write_text("id,churned\n10,0\n10,1\n")  # a repeated id: our bug
    response = upload(signed_in, competition, RIGHT)
    assert response.status_code == 400 and not Submission.objects.exists()
    assert "cannot be graded right now" in response.content.decode()


def test_anonymous_users_are_sent_to_log_in_and_nothing_is_graded(client, competition):
    response = client.post(reverse("competitions:submit", args=[competition.slug]), {})
    assert response.status_code == 302 and "/login/" in response.url
    assert not Submission.objects.exists()


def test_a_competition_the_user_cannot_see_is_a_404(client, stranger, competition):
    client.force_login(stranger)
    assert client.get(reverse("competitions:submit", args=[competition.slug])).status_code == 404
    assert upload(client, competition, RIGHT).status_code == 404 and not Submission.objects.exists()


def test_the_history_lists_only_the_users_own_submissions(client, owner, teammate, competition):
    competition.is_public = True
    competition.save()
    client.force_login(teammate)
    upload(client, competition, HALF_RIGHT, name="bobs.csv")
    client.force_login(owner)
    body = client.get(reverse("competitions:submit", args=[competition.slug])).content.decode()
    assert "bobs.csv" not in body and "None yet." in body


def test_a_quota_says_when_the_oldest_submission_in_the_window_frees_a_place(owner, competition, settings):
    settings.PRACTICUM_SUBMISSIONS_PER_DAY = 2
    now = timezone.now()
    for hours_ago in (20, 5, 1):
        row = Submission.objects.create(
            competition=competition, user=owner, file_name="s.csv", size_bytes=1, valid=True, score=1.0
        )
        Submission.objects.filter(id=row.id).update(created_at=now - timedelta(hours=hours_ago))
    quota = submissions.submission_quota(user=owner, competition=competition, now=now)
    assert (quota.used, quota.left) == (3, 0)
    assert quota.next_at == now - timedelta(hours=5) + timedelta(hours=24)  # the 20 h and 5 h old must expire
