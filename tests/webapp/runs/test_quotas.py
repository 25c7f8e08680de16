"""Admission control: per-user limits on active runs and attempts in flight, refused in one sentence."""

from __future__ import annotations

import pytest

from webapp.runs import services
from webapp.runs.models import Run
from webapp.runs.quotas import QuotaExceeded

pytestmark = pytest.mark.django_db


@pytest.fixture
def start(competition):
    def start_run(owner, *, actors: int = 2) -> Run:
        return services.run_start(
            owner=owner, competitions=[competition], config={"attempts": 4, "actors": actors}
        )

    return start_run


def test_a_user_within_quota_starts_a_run(start, owner):
    assert start(owner).status == Run.Status.QUEUED


def test_a_user_cannot_have_more_runs_active_than_the_limit(start, owner, settings):
    settings.PRACTICUM_MAX_RUNS_PER_USER = 2
    start(owner), start(owner)
    with pytest.raises(QuotaExceeded, match="You already have 2 runs queued or running"):
        start(owner)


def test_a_refused_run_is_not_created(start, owner, settings):
    settings.PRACTICUM_MAX_RUNS_PER_USER = 1
    start(owner)
    with pytest.raises(QuotaExceeded):
        start(owner)
    assert Run.objects.filter(owner=owner).count() == 1


def test_a_user_cannot_keep_more_attempts_in_flight_than_the_limit(start, owner, settings):
    settings.PRACTICUM_MAX_IN_FLIGHT_PER_USER = 8
    start(owner, actors=6)
    with pytest.raises(QuotaExceeded, match="lower actors to 2"):
        start(owner, actors=4)


def test_a_finished_run_frees_its_place(start, owner, settings):
    settings.PRACTICUM_MAX_RUNS_PER_USER = 1
    services.run_set_status(run_id=start(owner).id, status=Run.Status.FINISHED)
    assert start(owner).status == Run.Status.QUEUED


def test_one_users_runs_do_not_count_against_another(start, owner, teammate, settings):
    settings.PRACTICUM_MAX_RUNS_PER_USER = 1
    start(owner)
    assert start(teammate).owner == teammate


def test_runs_without_an_owner_are_not_limited(start, settings):
    settings.PRACTICUM_MAX_RUNS_PER_USER = 1
    start(None), start(None)
    assert Run.objects.filter(owner=None).count() == 2


def test_a_quota_refusal_is_a_value_error_so_existing_callers_show_its_message():
    assert issubclass(QuotaExceeded, ValueError)
